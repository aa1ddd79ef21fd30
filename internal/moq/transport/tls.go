package transport

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TLSOptions are a client's TLS settings.
type TLSOptions struct {
	// Base, when set, is cloned as the starting configuration.
	Base *tls.Config
	// RootCAs replaces the system roots.
	RootCAs *x509.CertPool
	// Fingerprint pins the server certificate (see ParseFingerprint):
	// chain, name and expiry are then not checked.
	Fingerprint string
	// Insecure skips verification entirely.
	Insecure bool
}

// ClientTLS builds the client TLS configuration for t offering alpns. pin,
// when set, replaces o.Fingerprint (a development relay's fetched pin).
// Verification stays on unless o asks otherwise through Fingerprint or
// Insecure, whatever o.Base says.
func ClientTLS(o TLSOptions, t *Target, alpns []string, pin string) (*tls.Config, error) {
	var c *tls.Config
	if o.Base != nil {
		c = o.Base.Clone()
	} else {
		c = &tls.Config{}
	}
	c.NextProtos = alpns
	if c.ServerName == "" {
		c.ServerName = t.Host
	}
	if o.RootCAs != nil {
		c.RootCAs = o.RootCAs
	}
	if pin == "" {
		pin = o.Fingerprint
	}
	switch {
	case pin != "":
		want, err := ParseFingerprint(pin)
		if err != nil {
			return nil, err
		}
		// The pin replaces chain verification. VerifyConnection runs on
		// every handshake, resumed ones included (VerifyPeerCertificate
		// does not), so a cached session cannot bypass the pin.
		c.InsecureSkipVerify = true
		c.VerifyPeerCertificate = nil
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("moq: server sent no certificate")
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if subtle.ConstantTimeCompare(got[:], want) != 1 {
				return fmt.Errorf("moq: certificate fingerprint %x does not match the pin", got)
			}
			return nil
		}
	case o.Insecure:
		c.InsecureSkipVerify = true
	default:
		c.InsecureSkipVerify = false
	}
	return c, nil
}

// ParseFingerprint reads a certificate pin: the hex SHA-256 of the DER
// leaf, colons and case ignored.
func ParseFingerprint(s string) ([]byte, error) {
	s = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ":", ""))
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("moq: TLS fingerprint must be 64 hex digits (SHA-256 of the DER leaf)")
	}
	return b, nil
}

// FetchFingerprint is the development bootstrap: GET
// http://host:port/certificate.sha256 over TCP.
func FetchFingerprint(ctx context.Context, t *Target) (string, error) {
	u := url.URL{Scheme: "http", Host: t.URL.Host, Path: "/certificate.sha256"}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("moq: fetch certificate fingerprint: %s", RedactError(err))
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(rsp.Body, 1024))
	if err != nil {
		return "", fmt.Errorf("moq: fetch certificate fingerprint: %w", err)
	}
	if rsp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("moq: fetch %s: status %d", u.String(), rsp.StatusCode)
	}
	pin := strings.TrimSpace(string(body))
	if _, err := ParseFingerprint(pin); err != nil {
		return "", fmt.Errorf("moq: %s: %w", u.String(), err)
	}
	return pin, nil
}
