package wire

// Stream reset codes of moq-lite's old registry (lite-01..05 as first
// published) that a session sends, by the names package subscribe gives
// them; StreamCode renumbers them for lite-06.
const (
	CodeCancel     = 0
	CodeOld        = 2
	CodeTimeout    = 3
	CodeDecode     = 5
	CodeNotFound   = 13
	CodeClosed     = 25
	CodeUnroutable = 30
)

// renumbered are the lite-06 stream codes (T-lite06 Table 3) of the old
// codes above.
var renumbered = map[uint64]uint64{
	CodeCancel: 0x1, CodeOld: 0x34, CodeTimeout: 0x2, CodeDecode: 0x12, CodeNotFound: 0x33,
	CodeUnroutable: 0x36, CodeClosed: 0x3,
}

// StreamCode is the stream code to send for code (named in the old
// registry) on a session of version v: renumbered on lite-06 (a
// FrameRange version), unchanged before, where peers may read the old
// registry only.
func StreamCode(v *Version, code uint64) uint64 {
	if v != nil && v.FrameRange {
		if n, ok := renumbered[code]; ok {
			return n
		}
	}
	return code
}
