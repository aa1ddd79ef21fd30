// Package mkv writes the mkv container for the export engine.
package mkv
