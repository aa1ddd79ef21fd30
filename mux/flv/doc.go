// Package flv writes the flv container for the export engine.
package flv
