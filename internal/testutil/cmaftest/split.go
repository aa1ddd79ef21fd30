// Package cmaftest is test support for CMAF input: it turns an ffmpeg-made
// fragmented MP4 into what `moq import fmp4` publishes (rs/moq-mux
// container/fmp4/import.rs): one single-track init per track (ftyp plus a
// moov holding that trak and its trex) and, per fragment and track, one
// single-track moof+mdat with the tfhd's base_data_offset cleared and the
// trun data offsets rewritten to count from the new moof. The track
// fragment boxes are otherwise kept byte for byte (tfhd defaults,
// first_sample_flags, trun versions), so tests see what ffmpeg writes.
// Only tests import it.
package cmaftest

import (
	"encoding/binary"
	"fmt"
)

// Fragment is one moq frame of a track: a single-track moof+mdat.
type Fragment struct {
	TrackID uint32
	Data    []byte
}

// File is a fragmented MP4 split like the reference importer splits it.
type File struct {
	// Inits are the single-track init segments by track id.
	Inits map[uint32][]byte
	// Handlers are the tracks' handler types ("vide", "soun") by id.
	Handlers map[uint32]string
	// Timescales are the mdhd timescales by id.
	Timescales map[uint32]uint32
	// Fragments are in file order.
	Fragments []Fragment
}

type box struct {
	typ              string
	start, body, end int
}

func boxes(b []byte, from, to int) ([]box, error) {
	var out []box
	for off := from; off < to; {
		if to-off < 8 {
			return nil, fmt.Errorf("box header truncated at %d", off)
		}
		size := int(binary.BigEndian.Uint32(b[off:]))
		bx := box{typ: string(b[off+4 : off+8]), start: off, body: off + 8}
		switch size {
		case 0:
			size = to - off
		case 1:
			size = int(binary.BigEndian.Uint64(b[off+8:]))
			bx.body = off + 16
		}
		if size < bx.body-off || off+size > to {
			return nil, fmt.Errorf("%s box of %d bytes at %d overflows %d", bx.typ, size, off, to)
		}
		bx.end = off + size
		out = append(out, bx)
		off = bx.end
	}
	return out, nil
}

func find(bs []box, typ string) (box, bool) {
	for _, bx := range bs {
		if bx.typ == typ {
			return bx, true
		}
	}
	return box{}, false
}

func mkbox(typ string, parts ...[]byte) []byte {
	n := 8
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 8, n)
	binary.BigEndian.PutUint32(out, uint32(n))
	copy(out[4:], typ)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type trexDefaults struct{ duration, size, flags uint32 }

// Split splits a fragmented MP4 file.
func Split(file []byte) (*File, error) {
	top, err := boxes(file, 0, len(file))
	if err != nil {
		return nil, err
	}
	f := &File{Inits: map[uint32][]byte{}, Handlers: map[uint32]string{}, Timescales: map[uint32]uint32{}}
	var ftyp []byte
	trex := map[uint32]trexDefaults{}
	var moof *box
	for i := range top {
		bx := top[i]
		switch bx.typ {
		case "ftyp":
			ftyp = file[bx.start:bx.end]
		case "moov":
			if err := f.splitMoov(file, bx, ftyp, trex); err != nil {
				return nil, err
			}
		case "moof":
			moof = &top[i]
		case "mdat":
			if moof == nil {
				return nil, fmt.Errorf("mdat without moof at %d", bx.start)
			}
			frags, err := splitMoof(file, *moof, trex)
			if err != nil {
				return nil, err
			}
			f.Fragments = append(f.Fragments, frags...)
			moof = nil
		}
	}
	if len(f.Inits) == 0 {
		return nil, fmt.Errorf("no moov")
	}
	return f, nil
}

func (f *File) splitMoov(b []byte, moov box, ftyp []byte, trex map[uint32]trexDefaults) error {
	kids, err := boxes(b, moov.body, moov.end)
	if err != nil {
		return err
	}
	mvhd, _ := find(kids, "mvhd")
	trexBoxes := map[uint32][]byte{}
	if mvex, ok := find(kids, "mvex"); ok {
		mk, err := boxes(b, mvex.body, mvex.end)
		if err != nil {
			return err
		}
		for _, t := range mk {
			if t.typ == "trex" && t.end-t.body >= 24 {
				id := binary.BigEndian.Uint32(b[t.body+4:])
				trexBoxes[id] = b[t.start:t.end]
				trex[id] = trexDefaults{binary.BigEndian.Uint32(b[t.body+12:]), binary.BigEndian.Uint32(b[t.body+16:]), binary.BigEndian.Uint32(b[t.body+20:])}
			}
		}
	}
	for _, trak := range kids {
		if trak.typ != "trak" {
			continue
		}
		tk, err := boxes(b, trak.body, trak.end)
		if err != nil {
			return err
		}
		tkhd, ok := find(tk, "tkhd")
		if !ok {
			return fmt.Errorf("trak without tkhd")
		}
		off := tkhd.body + 12
		if b[tkhd.body] == 1 {
			off = tkhd.body + 20
		}
		id := binary.BigEndian.Uint32(b[off:])
		if mdia, ok := find(tk, "mdia"); ok {
			mk, err := boxes(b, mdia.body, mdia.end)
			if err != nil {
				return err
			}
			if h, ok := find(mk, "hdlr"); ok {
				f.Handlers[id] = string(b[h.body+8 : h.body+12])
			}
			if m, ok := find(mk, "mdhd"); ok {
				if b[m.body] == 1 {
					f.Timescales[id] = binary.BigEndian.Uint32(b[m.body+20:])
				} else {
					f.Timescales[id] = binary.BigEndian.Uint32(b[m.body+12:])
				}
			}
		}
		tx := trexBoxes[id]
		if tx == nil {
			tx = mkbox("trex", []byte{0, 0, 0, 0}, binary.BigEndian.AppendUint32(nil, id), []byte{0, 0, 0, 1}, make([]byte, 12))
		}
		moovOut := mkbox("moov", b[mvhd.start:mvhd.end], b[trak.start:trak.end], mkbox("mvex", tx))
		f.Inits[id] = append(append([]byte(nil), ftyp...), moovOut...)
	}
	return nil
}

// splitMoof makes one single-track moof+mdat per traf of moof.
func splitMoof(b []byte, moof box, trex map[uint32]trexDefaults) ([]Fragment, error) {
	kids, err := boxes(b, moof.body, moof.end)
	if err != nil {
		return nil, err
	}
	mfhd, _ := find(kids, "mfhd")
	var out []Fragment
	prevEnd := moof.start // base for a traf without base offset: the moof
	for _, traf := range kids {
		if traf.typ != "traf" {
			continue
		}
		tk, err := boxes(b, traf.body, traf.end)
		if err != nil {
			return nil, err
		}
		th, ok := find(tk, "tfhd")
		if !ok {
			return nil, fmt.Errorf("traf without tfhd")
		}
		flags := binary.BigEndian.Uint32(b[th.body:]) & 0xffffff
		id := binary.BigEndian.Uint32(b[th.body+4:])
		p := th.body + 8
		base := uint64(moof.start)
		if flags&0x01 != 0 {
			base = binary.BigEndian.Uint64(b[p:])
			p += 8
		} else if flags&0x020000 == 0 {
			base = uint64(prevEnd)
		}
		def := trex[id]
		if flags&0x02 != 0 {
			p += 4
		}
		if flags&0x08 != 0 {
			def.duration = binary.BigEndian.Uint32(b[p:])
			p += 4
		}
		if flags&0x10 != 0 {
			def.size = binary.BigEndian.Uint32(b[p:])
			p += 4
		}
		// tfhd without base_data_offset, with default-base-is-moof.
		newTfhd := append([]byte(nil), b[th.body:th.body+8]...)
		nf := (flags &^ 0x01) | 0x020000
		binary.BigEndian.PutUint32(newTfhd, (uint32(b[th.body])<<24)|nf)
		newTfhd = append(newTfhd, b[th.body+8+int(flags&0x01)*8:th.end]...)
		// Runs: where their data is, how much of it.
		type run struct {
			bx         box
			start, len int
		}
		var runs []run
		pos := int(base)
		for _, t := range tk {
			if t.typ != "trun" {
				continue
			}
			tf := binary.BigEndian.Uint32(b[t.body:]) & 0xffffff
			n := int(binary.BigEndian.Uint32(b[t.body+4:]))
			q := t.body + 8
			if tf&0x01 != 0 {
				pos = int(base) + int(int32(binary.BigEndian.Uint32(b[q:])))
				q += 4
			} else if len(runs) == 0 && flags&0x01 == 0 {
				pos = int(base)
			}
			if tf&0x04 != 0 {
				q += 4
			}
			total := 0
			for range n {
				if tf&0x100 != 0 {
					q += 4
				}
				size := int(def.size)
				if tf&0x200 != 0 {
					size = int(binary.BigEndian.Uint32(b[q:]))
					q += 4
				}
				if tf&0x400 != 0 {
					q += 4
				}
				if tf&0x800 != 0 {
					q += 4
				}
				total += size
			}
			if tf&0x01 == 0 {
				return nil, fmt.Errorf("trun without data_offset: not made by ffmpeg")
			}
			if pos < 0 || pos+total > len(b) {
				return nil, fmt.Errorf("run data [%d,%d) beyond the file", pos, pos+total)
			}
			runs = append(runs, run{bx: t, start: pos, len: total})
			pos += total
		}
		prevEnd = pos
		// Build the traf twice: the second time with the data offsets
		// the first one's size gives.
		build := func(moofLen int) []byte {
			parts := [][]byte{}
			cum := 0
			ri := 0
			for _, t := range tk {
				switch t.typ {
				case "tfhd":
					parts = append(parts, mkbox("tfhd", newTfhd))
				case "trun":
					body := append([]byte(nil), b[t.body:t.end]...)
					binary.BigEndian.PutUint32(body[8:], uint32(moofLen+8+cum))
					cum += runs[ri].len
					ri++
					parts = append(parts, mkbox("trun", body))
				default:
					parts = append(parts, b[t.start:t.end])
				}
			}
			return mkbox("moof", b[mfhd.start:mfhd.end], mkbox("traf", parts...))
		}
		m := build(0)
		m = build(len(m))
		var data []byte
		for _, r := range runs {
			data = append(data, b[r.start:r.start+r.len]...)
		}
		out = append(out, Fragment{TrackID: id, Data: append(m, mkbox("mdat", data)...)})
	}
	return out, nil
}
