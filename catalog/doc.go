// Package catalog parses the hang catalog: the JSON document a broadcast
// publishes on its "catalog.json" track (and, raw-DEFLATE compressed, on
// "catalog.json.z") to list its video and audio renditions.
//
// It owns the schema (every field of the reference sheet), the decoding
// rules (lowercase or uppercase hex descriptions, the old displayRatio names,
// the old array form, unknown sections and fields ignored) and the inflation
// of compressed catalog groups. It does not subscribe to anything: package
// subscribe feeds it frames.
package catalog
