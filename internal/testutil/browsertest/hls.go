package browsertest

// HLSLive is the JavaScript that plays an HLS package while it is
// recorded, with hls.js in the page's <video id="v">: fmt.Sprintf it with
// the playback rate (%g) and the multivariant playlist's URL (%q). It
// resolves once 0.5 s has played, with whether hls.js saw the playlist as
// live (an EVENT playlist without ENDLIST): {live, time}. It also sets up
// HLSLiveEnd, the wait for the end once the recording has ended.
const HLSLive = `new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const hls = new Hls();
  const seen = [];
  // An error says which stream controller (parent) and fragment it is of.
  const frag = (d) => (d.parent ? ' ' + d.parent : '') + (d.frag ? ' sn=' + d.frag.sn + ' ' + Number(d.frag.start).toFixed(2) + '-' + Number(d.frag.end).toFixed(2) : '');
  for (const ev of ['LEVEL_LOADED', 'AUDIO_TRACK_LOADED', 'BUFFER_EOS', 'ERROR']) hls.on(Hls.Events[ev], (e, d) => seen.push(ev + (d.details && d.details.endSN !== undefined ? ' endSN=' + d.details.endSN + ' live=' + d.details.live : ' ' + d.details + (ev === 'ERROR' ? frag(d) : '')) + ' at ' + v.currentTime.toFixed(2)));
  const ranges = (b) => Array.from({length: b.length}, (_, i) => b.start(i).toFixed(2) + '-' + b.end(i).toFixed(2)).join(',');
  // What each SourceBuffer holds after its last append: which of them a
  // hole in the element's buffered ranges (their intersection) is in.
  const appended = {};
  hls.on(Hls.Events.BUFFER_APPENDED, (e, d) => { try { for (const [type, tr] of Object.entries(d.timeRanges || {})) if (tr) appended[type] = ranges(tr); } catch (err) { appended.error = String(err); } });
  // What the page saw, when the end does not come.
  const state = () => JSON.stringify({time: v.currentTime, duration: v.duration, paused: v.paused, readyState: v.readyState, buffered: ranges(v.buffered), appended, seen: seen.slice(-16)});
  window.liveEnded = new Promise((resolve, reject) => {
    v.addEventListener('ended', () => resolve({ended: true, time: v.currentTime, frames: v.getVideoPlaybackQuality().totalVideoFrames}));
    window.liveWait = () => setTimeout(() => reject(new Error('no end within 45 s of the recording\'s end: ' + state())), 45000);
  });
  setTimeout(() => reject(new Error('no playback within 30 s: ' + state())), 30000);
  hls.on(Hls.Events.ERROR, (e, d) => { if (d.fatal) reject(new Error('fatal ' + d.details + ': ' + state())); });
  hls.on(Hls.Events.MANIFEST_PARSED, () => { v.playbackRate = %g; v.play(); });
  v.addEventListener('timeupdate', () => {
    if (v.currentTime > 0.5) resolve({live: hls.levels[hls.currentLevel].details.live, time: v.currentTime});
  });
  hls.loadSource(%q);
  hls.attachMedia(v);
})`

// HLSLiveEnd waits for the end of the package HLSLive plays, after the
// recording has ended: {ended, time, frames}, or an error with what the
// page saw (the last playlist loads, the position, what is buffered) when
// no end comes within 45 s.
const HLSLiveEnd = `window.liveWait(), window.liveEnded`
