// Package units formats quantities for people (byte sizes), the one
// formatter that the library's errors, the object-store output and the
// command share.
package units
