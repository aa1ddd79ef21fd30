package token_test

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/token"
)

// A relay-style check: verify the token of a connection, then ask what it
// may publish there.
func Example() {
	signer, _ := token.Generate("ES256")
	pub, _ := signer.PublicJSON() // what --auth-key is given
	verifier, _ := token.ParseKey(pub)

	jwt, _ := signer.Sign(token.Claims{Root: "rooms/123", Put: token.Paths{"alice"}, Get: token.Paths{""}})
	claims, err := verifier.Verify(jwt, time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	perms, _ := claims.Authorize("rooms/123") // the connection path
	fmt.Println(perms.CanPublish("alice"), perms.CanPublish("bob"), perms.CanSubscribe("bob"))
	// Output: true false true
}
