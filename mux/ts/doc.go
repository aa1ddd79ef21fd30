// Package ts writes the ts container for the export engine.
package ts
