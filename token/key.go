package token

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// maxKeyFile bounds a key file: the largest JWK (RSA 4096 with every
// private field) is about 4 KiB.
const maxKeyFile = 64 << 10

// minSecret is the shortest HMAC secret the reference accepts, in bytes.
const minSecret = 32

// ErrKey means a key file that is not a usable moq-token JWK.
var ErrKey = errors.New("token: bad key")

// Key is a moq-token signing or verifying key: one JWK and the one
// algorithm its tokens use.
type Key struct {
	alg    jwa.SignatureAlgorithm
	name   string  // the algorithm's name, "HS256" ...
	verify jwk.Key // the secret, or the public half
	sign   jwk.Key // nil without private material
	ops    []string
	kid    string
	scope  *Scope
}

// Scope is the ceiling a key puts on what its tokens may grant (the
// JWK's optional "scope" member): every publish and subscribe path of a
// token must lie under one of the key's, per role.
type Scope struct {
	Root string   `json:"root,omitempty"`
	Put  []string `json:"put,omitempty"`
	Get  []string `json:"get,omitempty"`
}

// keyFields are the JWK members this package checks itself.
type keyFields struct {
	Alg    string   `json:"alg"`
	Crv    string   `json:"crv"`
	K      string   `json:"k"`
	D      string   `json:"d"`
	KeyOps []string `json:"key_ops"`
	Kid    string   `json:"kid"`
	Scope  *Scope   `json:"scope"`
}

// algorithms maps the algorithms of the reference to their key type.
var algorithms = map[string]string{
	"HS256": "oct", "HS384": "oct", "HS512": "oct",
	"ES256": "EC", "ES384": "EC",
	"RS256": "RSA", "RS384": "RSA", "RS512": "RSA",
	"PS256": "RSA", "PS384": "RSA", "PS512": "RSA",
	"EdDSA": "OKP",
}

// curves is the curve each EC or OKP algorithm needs.
var curves = map[string]string{"ES256": "P-256", "ES384": "P-384", "EdDSA": "Ed25519"}

// Algorithms lists the algorithm names a key may have.
func Algorithms() []string {
	return []string{"HS256", "HS384", "HS512", "ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}
}

// LoadKey reads a key file (see ParseKey).
func LoadKey(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token: key file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("token: key file %s: %w", path, err)
	}
	k, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ParseKey reads a JWK in the forms the reference writes: JSON, or the
// JSON base64url-encoded. Errors wrap ErrKey and never quote key material.
func ParseKey(data []byte) (*Key, error) {
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrKey, maxKeyFile)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] != '{' {
		dec, err := decodeBase64(string(data))
		if err != nil {
			return nil, fmt.Errorf("%w: neither JSON nor base64url-encoded JSON", ErrKey)
		}
		data = bytes.TrimSpace(dec)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrKey)
	}
	var f keyFields
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrKey, jsonFieldError(err))
	}
	kty := "oct" // the legacy form: an HMAC secret without "kty"
	if raw, ok := members["kty"]; ok {
		if err := json.Unmarshal(raw, &kty); err != nil {
			return nil, fmt.Errorf("%w: kty is not a string", ErrKey)
		}
	}
	want, ok := algorithms[f.Alg]
	if !ok {
		return nil, fmt.Errorf("%w: algorithm %q is none of %v", ErrKey, f.Alg, Algorithms())
	}
	if kty != want {
		return nil, fmt.Errorf("%w: algorithm %s needs a %s key, this one is %q", ErrKey, f.Alg, want, kty)
	}
	if crv, ok := curves[f.Alg]; ok && f.Crv != crv {
		return nil, fmt.Errorf("%w: algorithm %s needs curve %s, this key has %q", ErrKey, f.Alg, crv, f.Crv)
	}
	if kty == "oct" {
		secret, err := decodeBase64(f.K)
		if err != nil || len(secret) < minSecret {
			return nil, fmt.Errorf("%w: an %s secret (k) must be base64url of at least %d bytes", ErrKey, f.Alg, minSecret)
		}
	}
	ops := f.KeyOps
	if _, ok := members["key_ops"]; !ok {
		ops = []string{"sign", "verify"}
	}
	if f.Scope != nil {
		if len(f.Scope.Put) == 0 && len(f.Scope.Get) == 0 {
			return nil, fmt.Errorf("%w: its scope grants neither put nor get", ErrKey)
		}
	}
	// jwx parses the material; the members this package handles stay out
	// of its way.
	members["kty"], _ = json.Marshal(kty)
	delete(members, "key_ops")
	delete(members, "scope")
	clean, _ := json.Marshal(members)
	jk, err := jwk.ParseKey(clean)
	if err != nil {
		return nil, fmt.Errorf("%w: %s key material: %s", ErrKey, kty, redactErr(err))
	}
	if err := jk.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s key material: %s", ErrKey, kty, redactErr(err))
	}
	alg, _ := jwa.LookupSignatureAlgorithm(f.Alg)
	k := &Key{alg: alg, name: f.Alg, ops: ops, kid: f.Kid, scope: f.Scope}
	switch {
	case kty == "oct":
		k.verify, k.sign = jk, jk
	case f.D != "":
		k.sign = jk
		if k.verify, err = jk.PublicKey(); err != nil {
			return nil, fmt.Errorf("%w: deriving the public key: %s", ErrKey, redactErr(err))
		}
	default:
		k.verify = jk
	}
	return k, nil
}

// redactErr is a jwx error's text: it names fields and formats, never
// their values.
func redactErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// jsonFieldError says which member had the wrong type.
func jsonFieldError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("member %q has the wrong type", te.Field)
	}
	return "not a JSON object"
}

// decodeBase64 decodes base64url with or without padding, and the
// standard alphabet as a fallback (as the reference's loader does).
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Algorithm returns the key's algorithm name ("HS256", "ES256" ...).
func (k *Key) Algorithm() string { return k.name }

// ID returns the key's "kid" ("" without one).
func (k *Key) ID() string { return k.kid }

// Private reports whether the key can sign.
func (k *Key) Private() bool { return k.sign != nil && slices.Contains(k.ops, "sign") }

// Generate makes a new key for alg (one of Algorithms), with a random
// kid, as the reference's "generate" does: a 32, 48 or 64 byte secret for
// HS256/384/512, RSA 2048, P-256/P-384, Ed25519.
func Generate(alg string) (*Key, error) {
	var raw any
	var err error
	switch alg {
	case "HS256", "HS384", "HS512":
		secret := make([]byte, map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}[alg])
		_, err = rand.Read(secret)
		raw = secret
	case "ES256":
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		raw, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	case "EdDSA":
		_, raw, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("%w: algorithm %q is none of %v", ErrKey, alg, Algorithms())
	}
	if err != nil {
		return nil, fmt.Errorf("token: generating a %s key: %w", alg, err)
	}
	jk, err := jwk.Import(raw)
	if err != nil {
		return nil, fmt.Errorf("token: generating a %s key: %w", alg, err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	a, _ := jwa.LookupSignatureAlgorithm(alg)
	k := &Key{alg: a, name: alg, sign: jk, ops: []string{"sign", "verify"}, kid: hex.EncodeToString(id[:])}
	if _, ok := raw.([]byte); ok {
		k.verify = jk
	} else if k.verify, err = jk.PublicKey(); err != nil {
		return nil, fmt.Errorf("token: generating a %s key: %w", alg, err)
	}
	return k, nil
}

// MarshalJSON writes the key as the reference's JWK JSON: with its
// private material when it has any (keep such a file secret).
func (k *Key) MarshalJSON() ([]byte, error) {
	if k.sign != nil {
		return k.jwkJSON(k.sign, k.ops)
	}
	return k.jwkJSON(k.verify, k.ops)
}

// PublicJSON writes the public half of an asymmetric key as JWK JSON (for
// a verifier such as --auth-key). An HMAC key has no public half.
func (k *Key) PublicJSON() ([]byte, error) {
	if algorithms[k.name] == "oct" {
		return nil, fmt.Errorf("%w: an %s secret has no public half: the verifier needs the secret itself", ErrKey, k.name)
	}
	return k.jwkJSON(k.verify, []string{"verify"})
}

func (k *Key) jwkJSON(jk jwk.Key, ops []string) ([]byte, error) {
	body, err := json.Marshal(jk)
	if err != nil {
		return nil, fmt.Errorf("token: encoding the key: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("token: encoding the key: %w", err)
	}
	m["alg"] = k.name
	m["key_ops"] = ops
	if k.kid != "" {
		m["kid"] = k.kid
	}
	if k.scope != nil {
		m["scope"] = k.scope
	}
	return json.MarshalIndent(m, "", "  ")
}
