// Package subscribe speaks moq-lite to a relay or publisher and fills
// package model with what it receives.
package subscribe
