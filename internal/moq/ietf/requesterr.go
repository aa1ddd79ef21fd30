package ietf

// Request error codes: REQUEST_ERROR's one registry from draft 15 on, and
// draft 14's registries per refusal message (SUBSCRIBE_ERROR,
// FETCH_ERROR, ...), which number some conditions differently (draft 15
// renumbered them; draft 14's 0x4, a missing track, is MALFORMED_AUTH_TOKEN
// from draft 15 on, and its FETCH 0x6, NO_OBJECTS, is GOING_AWAY from
// draft 17). The ones below are the same in every draft.
const (
	ReqInternalError = 0x0
	ReqUnauthorized  = 0x1
	ReqTimeout       = 0x2
	// ReqNotSupported: the endpoint does not implement the request at
	// all, as opposed to refusing this one (the reference publisher's
	// answer to every standalone FETCH).
	ReqNotSupported = 0x3
)

// ReqDoesNotExist is the code of "no such track": draft 14's
// TRACK_DOES_NOT_EXIST (SUBSCRIBE_ERROR and FETCH_ERROR), DOES_NOT_EXIST
// from draft 15.
func ReqDoesNotExist(v Version) uint64 {
	if v == Draft14 {
		return 0x4
	}
	return 0x10
}

// ReqInvalidRange is the code of a range that ends before its start, or
// (from draft 15) that starts past the publisher's Largest Object or asks
// a track with no object: draft 14's INVALID_RANGE 0x5, 0x11 from draft 15.
func ReqInvalidRange(v Version) uint64 {
	if v == Draft14 {
		return 0x5
	}
	return 0x11
}

// ReqNoObjects is the code of a FETCH of which the publisher holds
// nothing: draft 14's FETCH_ERROR NO_OBJECTS; later drafts have no such
// code and say INVALID_RANGE.
func ReqNoObjects(v Version) uint64 {
	if v == Draft14 {
		return 0x6
	}
	return ReqInvalidRange(v)
}

// ReqInvalidJoining is the code of a joining FETCH whose subscription is
// unknown or not joinable: draft 14's INVALID_JOINING_REQUEST_ID 0x7,
// 0x32 from draft 15.
func ReqInvalidJoining(v Version) uint64 {
	if v == Draft14 {
		return 0x7
	}
	return 0x32
}
