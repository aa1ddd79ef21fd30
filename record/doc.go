// Package record records Media-over-QUIC broadcasts into files, as the
// moq-export command does: it is the library a recording service embeds,
// and the command is its flags.
//
// The shortest use records one broadcast of a relay into one file:
//
//	out, err := record.Files("alice.mkv", record.FileOptions{})
//	files, err := record.Run(ctx, record.Options{URL: "https://relay.example/anon?jwt=" + token,
//		Broadcast: "room/alice", Output: out, Duration: time.Hour})
//
// A service makes a Recorder from Options (named like the command's
// flags: Duration, Segment, Video, Audio, KeepTimestamps, Wait, ...) and
// an Output, then records one broadcast of a Source (Record) or every
// broadcast the source announces (RecordAll). A Source is a relay session
// (SessionSource of a subscribe.Dial), the publishers a subscribe.Server
// accepts (NewServerSource: what moq-export --listen records;
// Example_listen), or broadcasts made in process.
//
//	sess, err := subscribe.Dial(ctx, "https://relay.example/anon?jwt="+token, subscribe.Options{})
//	...
//	out, err := record.Files("rec/{broadcast}-{time}-{n}.mkv", record.FileOptions{})
//	rec, err := record.New(record.Options{Output: out, Segment: 10 * time.Minute,
//		OnFile: func(e record.FileEvent) { if e.Finished { upload(e.File.Path) } }})
//	err = rec.RecordAll(ctx, record.SessionSource(sess)) // until ctx ends: files finished
//
// Each recording is a value a service holds: Recorder.Start returns a
// *Recording (Record and RecordAll make them too; Recorder.Recordings
// lists those running, Options.OnRecording tells starts and ends) with its
// Stats, Files and Tracks, stopped, split into a next file or marked with
// a chapter alone (Stop, Split, Chapter):
//
//	r := rec.Start(ctx, record.SessionSource(sess), "room/alice")
//	...
//	r.Split()           // the next file starts at the next keyframe
//	r.Chapter("Q&A")    // MKV/WebM chapters, MP4 chapter list
//	r.Stop(); <-r.Done() // its files are finished; r.Err() says how it ended
//
// It speaks as a library: its errors are typed with fields (WaitError,
// SelectionError, RenditionError, FormatError, LimitError, CatalogError,
// OutOfFilesError) that a command renders in its own words, long waits go
// to Options.OnWait, and it leaves process-wide state (memory, signals,
// limits) to the program. Optional capabilities of Outputs, Files and
// Sources are named interfaces, never concrete types: LiveOutput,
// TemplatedOutput, PackageOutput, BroadcastOutput (takes the broadcast
// whole: ArchiveOutput), LocalFile, SizedFile, RemoteFile,
// SelfFlushingFile (gets no muxer flush: FileOutput, the object store's
// spool), EndingSource, PeerSource; an Output of one's own has them by
// having the methods.
//
// What it owns beyond the engine (package export) and the muxers (mux/...):
//
//   - Output files. Files names them from a template ({broadcast}, {n},
//     {time}); a broadcast name is untrusted and becomes one safe file name
//     (SafeName) that cannot leave the template's directory. A template
//     never overwrites (it appends -1, -2, ...); a plain path does only
//     with FileOptions.Overwrite. Files are written through FileOutput, a
//     buffered io.WriteSeeker, so MKV cues and duration, the FLV duration
//     and the MP4 index are finalized when a recording ends (a plain
//     bufio.Writer cannot seek, and the container would stay unfinished).
//     Stream writes one recording to a pipe, flushed every 50 ms. An Output
//     of one's own only needs to hand out Files; package objstore's writes
//     S3 objects, uploaded while recording (a RemoteFile: the muxers then
//     finish without rewriting what was uploaded). A URL of a scheme an
//     Output does not write is refused (SchemeError), never taken for a
//     path; file:// URLs are paths (LocalPath).
//   - Packages. The HLS format writes many files per recording (CMAF
//     segments of every rendition, playlists, a DASH manifest; mux/hls):
//     through a PackageOutput (Files: a directory whose files are written
//     to temporary names and renamed, inside an os.Root; objstore: one
//     object per file), and never to a Stream (ErrPackage). A recording to
//     a package that exists continues it.
//   - The check before recording (Recorder.Plan): a selection with nothing
//     the container can carry is an error naming the cause before any file
//     is created.
//   - Segments (Options.Segment) into numbered files; with {n} in the
//     template also the next file at the next keyframe when a rendition
//     added mid-recording cannot join the current one; RecordAll over
//     announcements (a broadcast announced again is recorded again),
//     Stats while recording, and FileEvents when a file is opened and when
//     it is finished, so a service can upload or index it.
//
// Cancelling the context given to Record or RecordAll stops the recordings
// and finishes their files before they return.
//
// A recording holds a goroutine only while it starts (the first catalog,
// the file) and while its export has work: waiting for media it is parked
// (export.Export.Go), so a thousand recordings of paused broadcasts cost
// their heap, not a thousand stacks.
package record
