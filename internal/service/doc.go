// Package service is the face moq-export shows when it runs as a recording
// service: one HTTP listener (Serve) with Prometheus metrics (/metrics),
// liveness and readiness (/health, /ready), a JSON control API
// (/api/v1/recordings: list, get, start, stop, split, chapter; described by
// docs/openapi.yaml), a status page (/) and the finished files it plays
// (/files/); signed webhooks and an on-file-finished command for every
// recording event; retention of the finished files by age and size; and the
// shard filter that splits a relay's broadcasts over several recorders.
//
// It owns none of the recording: it holds record.Recording values (one per
// broadcast, from the command's Recorder and from the Recorders it makes
// for the API), learns of them through record.Options hooks (Hooks), and
// reads their counters at scrape time. The command (internal/cli) decides
// what to record and when to stop; this package never touches process-wide
// state.
//
// Written by hand, on the standard library's net/http: the API is a few
// routes of Go 1.22 patterns, the status page one embedded HTML file with a
// little JavaScript (no build step). Metrics use prometheus/client_golang,
// the config file a YAML library; the webhook signature is HMAC-SHA256 of
// "timestamp.body" (the scheme of Stripe and Svix), for which crypto/hmac
// is all there is to it.
package service
