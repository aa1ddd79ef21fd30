// Package jitter merges the frames of several tracks into one stream in
// non-decreasing timestamp order, holding output back for a lagging track for
// at most a bounded delay.
package jitter
