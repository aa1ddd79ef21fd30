package catalog

import "testing"

func TestAudioLanguageAndLabelAreReadFromHangAndMSFCatalogs(t *testing.T) {
	t.Parallel()
	hang, err := Parse([]byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"lang":"de","label":"Deutsch"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	msf, err := ParseMSF([]byte(`{"version":1,"tracks":[{"name":"a","role":"audio","packaging":"loc","codec":"opus","samplerate":48000,"channelConfig":"2","lang":"de","label":"Deutsch"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Catalog{"hang": hang, "msf": msf} {
		if a := c.Audio.Renditions["a"]; a.Lang != "de" || a.Label != "Deutsch" {
			t.Errorf("%s: audio rendition %+v, want lang de, label Deutsch", name, a)
		}
	}
}

func TestATextRenditionInTheOldArrayFormIsRead(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{"text":[{"track":{"name":"subs"},"config":{"format":"vtt","lang":"fr"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rs := c.Renditions(); len(rs) != 1 || rs[0].Kind != KindText || rs[0].Text.Lang != "fr" || rs[0].Common().Codec != TextVTT {
		t.Fatalf("renditions %+v", rs)
	}
}
