// Package soak holds the chaos soak of the moq-export command
// (TestChaosSoak: blackholes, publisher and recorder kills and a full disk
// against one --record-all recorder, with a table of faults and losses;
// scripts/soak.sh runs it for an hour) and the tests of its fault windows.
// It is a package of its own so that the soak has a -timeout of its own.
package soak
