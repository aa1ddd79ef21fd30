package codecconf

// IsADTS reports whether p is one ADTS frame (a 7- or 9-byte header with
// the 0xFFF sync word, layer 0, and a frame length equal to len(p)): an
// AAC frame carried where raw AAC (the access unit alone) is expected.
func IsADTS(p []byte) bool {
	if len(p) < 7 || p[0] != 0xff || p[1]&0xf6 != 0xf0 {
		return false
	}
	n := int(p[3]&0x03)<<11 | int(p[4])<<3 | int(p[5])>>5
	return n == len(p)
}
