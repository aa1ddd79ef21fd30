package subscribe

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/moq-export/moq-export/internal/moq/ietf"
)

// TestIETFDraft15NamespaceEntriesOnTheControlStream: a draft-15 relay that
// answers SUBSCRIBE_NAMESPACE on the control stream with NAMESPACE and
// NAMESPACE_DONE entries (draft 16's shapes; draft 15 itself answers with
// PUBLISH_NAMESPACE, covered by the loopback and interop tests) is followed
// for discovery: each entry becomes an announcement under the prefix.
func TestIETFDraft15NamespaceEntriesOnTheControlStream(t *testing.T) {
	const v = ietf.Draft15
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{v.ALPN()}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	relay := make(chan error, 1)
	go func() {
		relay <- func() error {
			qc, err := ln.Accept(ctx)
			if err != nil {
				return err
			}
			defer qc.CloseWithError(0, "")
			ctrl, err := qc.AcceptStream(ctx)
			if err != nil {
				return err
			}
			r := bufio.NewReader(ctrl)
			if typ, _, err := ietf.ReadMessage(r, v); err != nil || typ != ietf.TypeClientSetup {
				return fmt.Errorf("CLIENT_SETUP: %#x, %v", typ, err)
			}
			var sp ietf.Params
			sp.SetVarint(ietf.SetupMaxRequestID, 100)
			write := func(typ uint64, m ietf.Message) error {
				_, err := ctrl.Write(ietf.Append(nil, typ, m, v))
				return err
			}
			if err := write(ietf.TypeServerSetup, &ietf.ServerSetup{Version: v, Params: sp}); err != nil {
				return err
			}
			for {
				typ, body, err := ietf.ReadMessage(r, v)
				if err != nil {
					return err
				}
				if typ != ietf.TypeSubscribeNamespace14 {
					continue
				}
				var m ietf.SubscribeNamespace
				if err := ietf.Decode(body, &m, v); err != nil {
					return err
				}
				if m.Prefix != "room" {
					return fmt.Errorf("SUBSCRIBE_NAMESPACE for %q", m.Prefix)
				}
				if err := write(ietf.TypeRequestOK, &ietf.RequestOK{RequestID: m.RequestID}); err != nil {
					return err
				}
				if err := write(ietf.TypeNamespace, &ietf.Namespace{Suffix: "alice"}); err != nil {
					return err
				}
				if err := write(ietf.TypeNamespace, &ietf.Namespace{Suffix: "bob"}); err != nil {
					return err
				}
				if err := write(ietf.TypeNamespaceDone, &ietf.Namespace{Suffix: "alice"}); err != nil {
					return err
				}
				<-ctx.Done()
				return nil
			}
		}()
	}()
	client, err := Dial(ctx, fmt.Sprintf("moqt://%s/", ln.Addr()), Options{TLSFingerprint: pin, Logger: testLogger(t),
		Reconnect: Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if client.Version() != "moq-transport-15" {
		t.Fatalf("version %s", client.Version())
	}
	ann, err := client.Announced(ctx, "room")
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	var got []string
	for len(got) < 3 {
		a, err := ann.Next(ctx)
		if err != nil {
			select {
			case rerr := <-relay:
				t.Fatalf("%v (relay: %v)", err, rerr)
			default:
			}
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%v", a.Path, a.Active))
	}
	// alice and bob come in one snapshot (sorted), alice's end after.
	want := "[room/alice:true room/bob:true room/alice:false]"
	if fmt.Sprint(got) != want {
		t.Fatalf("announcements %v, want %v", got, want)
	}
}
