// Package service holds the end-to-end tests of the moq-export command as a
// service: --listen with its authentication and limits, --demo-to into it,
// the JSON reports, --http's metrics, control API and status page, and HLS
// packages recorded, killed and continued.
package service
