// Package catalog parses the hang catalog: the JSON document a broadcast
// publishes on its "catalog.json" track (and, raw-DEFLATE compressed, on
// "catalog.json.z") to list its video and audio renditions.
//
// It owns the schema (every field of the reference sheet), the decoding
// rules (lowercase or uppercase hex descriptions, the old displayRatio names,
// the old array form, unknown sections and fields ignored), the inflation
// of compressed catalog groups, following a broadcast's catalog track
// (Watch, on package model: the newest snapshot, never an overtaken one),
// and for "cmaf" renditions what their init segment says that the
// rendition leaves out (the codec configuration record, size, rate,
// channels; read by package internal/format/cmaf). A cmaf rendition without a
// readable init stays listed, with Common.InitErr saying why, instead of
// failing the whole catalog as the reference does. It does no networking:
// package subscribe feeds the model broadcast.
package catalog
