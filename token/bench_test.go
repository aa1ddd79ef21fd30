package token

import "testing"

// BenchmarkVerify is the cost of admitting one session: verifying its
// token, per algorithm.
func BenchmarkVerify(b *testing.B) {
	for _, alg := range []string{"HS256", "ES256", "EdDSA", "RS256"} {
		b.Run(alg, func(b *testing.B) {
			k := mustGenerate(b, alg)
			v := reload(b, k)
			tok, err := k.Sign(Claims{Root: "demo", Put: Paths{"cam"}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(tok, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
