package catalog_test

import (
	"fmt"

	"github.com/moq-export/moq-export/catalog"
)

// A catalog with a subtitle rendition: Renditions lists it after the video
// and audio, and Common gives its format as the codec.
func ExampleParse_text() {
	cat, err := catalog.Parse([]byte(`{
		"video": {"renditions": {"hd": {"codec": "avc1.64001f"}}},
		"text": {"renditions": {"subs.en": {"format": "vtt", "lang": "en", "label": "English"}}}
	}`))
	if err != nil {
		panic(err)
	}
	for _, r := range cat.Renditions() {
		fmt.Println(r.Kind, r.Name, r.Common().Codec)
	}
	fmt.Println(cat.Text.Renditions["subs.en"].Lang)
	// Output:
	// video hd avc1.64001f
	// text subs.en vtt
	// en
}
