// Package moqpath owns the path rules moq-lite and moq-token share:
// broadcast paths and token scopes are "/"-separated segments with no
// empty segment, one path lies under another only on a segment boundary
// ("room" covers "room" and "room/alice", not "roomy"), and joining puts
// one "/" between non-empty parts. Package subscribe (broadcast paths,
// announce prefixes) and package token (roots, put and get scopes) both
// use it, so that a token's scope and the broadcasts it covers are matched
// by the same rules.
package moqpath
