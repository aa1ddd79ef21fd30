// Package layering holds the rule test of the module's import layering
// (docs: ../../ARCHITECTURE.md and the design note's "Rules the layout
// keeps"): go test fails when an import breaks a rule that holds. It has
// no code of its own; the rules are a table in layering_test.go, read from
// `go list -deps`.
package layering
