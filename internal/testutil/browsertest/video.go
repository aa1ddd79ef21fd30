package browsertest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// Playback is what a <video> element reported for one file: what it read
// from the header, where a seek to the middle landed, and the frames it
// decoded from there.
type Playback struct {
	Duration      float64 `json:"duration"`    // seconds, from the file
	Width         int     `json:"width"`       // videoWidth
	Height        int     `json:"height"`      // videoHeight
	SeekedTo      float64 `json:"seekedTo"`    // the middle, seconds
	CurrentTime   float64 `json:"currentTime"` // after playing from there
	FramesAtSeek  int     `json:"framesAtSeek"`
	FramesDecoded int     `json:"framesDecoded"` // getVideoPlaybackQuality().totalVideoFrames at the end
	Dropped       int     `json:"dropped"`
}

// playScript loads the page's URL argument in a muted <video>, waits for
// its metadata, seeks to the middle, plays until the element has decoded
// frames there and time has moved on, and reports. Every wait is for a
// media event; the only bound is the overall one, which turns a stall into
// an error that names what was missing.
const playScript = `(async (src) => {
  const v = document.createElement('video');
  v.muted = true; v.preload = 'auto'; v.src = src;
  document.body.appendChild(v);
  const failed = new Promise((_, rej) => v.addEventListener('error', () =>
    rej(new Error('media error ' + (v.error ? v.error.code + ' ' + v.error.message : '?')))));
  const once = (ev) => Promise.race([new Promise(res => v.addEventListener(ev, res, {once: true})), failed]);
  await once('loadedmetadata');
  const duration = v.duration, mid = duration / 2;
  const seeked = once('seeked');
  v.currentTime = mid;
  await seeked;
  const framesAtSeek = v.getVideoPlaybackQuality().totalVideoFrames;
  await Promise.race([v.play(), failed]);
  await Promise.race([failed, new Promise((res, rej) => {
    const began = performance.now();
    const check = () => {
      const q = v.getVideoPlaybackQuality();
      if (q.totalVideoFrames >= framesAtSeek + 5 && v.currentTime > mid + 0.2) return res();
      if (performance.now() - began > 20000)
        return rej(new Error('no frames decoded after seeking to ' + mid + ': ' + q.totalVideoFrames + ' frames, at ' + v.currentTime + ' s'));
      v.requestVideoFrameCallback(check);
    };
    v.requestVideoFrameCallback(check);
  })]);
  v.pause();
  const q = v.getVideoPlaybackQuality();
  return {duration, width: v.videoWidth, height: v.videoHeight, seekedTo: mid, currentTime: v.currentTime,
    framesAtSeek, framesDecoded: q.totalVideoFrames, dropped: q.droppedVideoFrames};
})`

// PlayVideo opens pageURL (any page of the test server, for its origin),
// then plays videoURL in a <video> element as playScript describes. Launch
// the browser with the flag "autoplay-policy=no-user-gesture-required".
func (b *Browser) PlayVideo(pageURL, videoURL string) (Playback, error) {
	if err := b.Navigate(pageURL); err != nil {
		return Playback{}, err
	}
	arg, _ := json.Marshal(videoURL)
	var p Playback
	if err := b.Eval(playScript+"("+string(arg)+")", &p); err != nil {
		return Playback{}, fmt.Errorf("playing %s: %w", videoURL, err)
	}
	return p, nil
}

// PlayFile serves the directory of the media file at path over HTTP (with
// a blank page for the origin) and plays the file as PlayVideo does.
func (b *Browser) PlayFile(path string) (Playback, error) {
	dir := filepath.Dir(path)
	page := filepath.Join(dir, "index.html")
	if err := os.WriteFile(page, []byte("<!doctype html><title>playback</title>"), 0o644); err != nil {
		return Playback{}, err
	}
	base := ServeDir(b.t, dir)
	return b.PlayVideo(base+"/index.html", base+"/"+url.PathEscape(filepath.Base(path)))
}

// CheckPlayback fails t unless p says the browser read a duration within
// tol seconds of want, a width×height picture, and decoded frames after
// the seek to the middle while time moved on.
func CheckPlayback(t testing.TB, p Playback, want, tol float64, width, height int) {
	t.Helper()
	t.Logf("chromium: %+v", p)
	if p.Duration < want-tol || p.Duration > want+tol {
		t.Errorf("duration %.3f s, want %.3f s ± %.3f", p.Duration, want, tol)
	}
	if p.Width != width || p.Height != height {
		t.Errorf("video size %dx%d, want %dx%d", p.Width, p.Height, width, height)
	}
	if p.CurrentTime <= p.SeekedTo || p.FramesDecoded < p.FramesAtSeek+5 {
		t.Errorf("after the seek to %.2f s: at %.2f s, %d frames decoded (%d at the seek)", p.SeekedTo, p.CurrentTime, p.FramesDecoded, p.FramesAtSeek)
	}
}
