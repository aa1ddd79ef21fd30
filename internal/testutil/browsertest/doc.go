// Package browsertest runs a real, headless Chromium for tests: the Debian
// `chromium` package driven over the DevTools protocol by
// github.com/chromedp/chromedp.
//
// It owns three things every browser test needs and none should repeat:
//   - finding Chromium, and skipping the test with a clear message when it is
//     absent, or failing it when a browser is required (CI=true or
//     MOQ_BROWSER_REQUIRED=1; CI installs chromium with
//     scripts/install-test-deps.sh);
//   - launching it with the flags a closed, root-run test machine needs
//     (headless, no sandbox, no GPU, no QUIC, no background networking, no
//     component updates, a fresh profile) plus any extra flags a test asks for,
//     such as fake media devices for a publisher test;
//   - serving test files over a local HTTP server that answers Range
//     requests (so <video> can seek), and evaluating JavaScript, awaiting its
//     promise, into a Go value;
//   - the playback check of the muxer tests: PlayFile/PlayVideo load a file
//     in a <video>, read its duration and size, seek to the middle and play
//     until frames decode there (getVideoPlaybackQuality), and
//     CheckPlayback compares that with what was recorded.
//
// Use:
//
//	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
//	base := browsertest.ServeDir(t, dir)
//	b.Navigate(base + "/page.html")
//	var d float64
//	b.Eval(`new Promise(r => ...)`, &d)
//
// chromedp does the DevTools protocol; this package only chooses the flags and
// the test policy around it.
package browsertest
