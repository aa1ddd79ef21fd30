// Package archive keeps broadcasts losslessly in the hang Recording format
// (the MoQ reference's `moq … export archive` layout, in an object store or
// a directory), and reads them back as broadcasts.
//
// It writes format version 2 and reads versions 2 and 1 (the byte layouts
// are package archive/internal/layout). An archive holds, under a prefix
// per broadcast, every track's objects as they were received (payload
// bytes before any container is unpacked: subscribe.Options.Objects), the
// catalog track as it changed, and a timeline per track that indexes its
// records by media time.
//
//   - Write archives one model broadcast into a Store: records cut as the
//     format recommends (media 2-10 s at group boundaries, the catalog at
//     each group), each segment object durable before the timeline object
//     that points at it, a record that cannot be stored dropped as a gap
//     (never a torn object), a DVR window (WriteOptions.Retention) trimmed
//     as new records land.
//   - Open and Recording read an archive; Recording.Broadcast serves a
//     time range of it as a model broadcast, unpacked (subscribe.Unpacker),
//     that the export engine records into any container, or that a
//     publisher replays in real time (ReadOptions.Pace), following a
//     concurrent writer (ReadOptions.Follow). Finding the start of a range
//     costs a bisection over the timeline objects (a GET each), not a
//     listing of the media: each track's own timeline (v2), or the
//     broadcast timeline whose records name each track's group-range
//     object (v1). A v1 recording without a timeline is the exception:
//     nothing maps its media time to groups, so each track's objects are
//     listed (keys only) and bisected by their first frame.
//
// Store is the storage contract: Dir implements it on a local directory;
// an object store implements the same four calls.
package archive
