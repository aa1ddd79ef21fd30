package service_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/service"
	"go.yaml.in/yaml/v3"
)

// TestTheOpenAPIFileDescribesTheAPI: docs/openapi.yaml names every route
// the service serves, and its schemas have exactly the JSON fields of the
// types the API reads and writes.
func TestTheOpenAPIFileDescribesTheAPI(t *testing.T) {
	b, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]any
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any
			}
		}
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{
		"get /api/v1/recordings", "post /api/v1/recordings", "get /api/v1/recordings/{id}", "delete /api/v1/recordings/{id}",
		"post /api/v1/recordings/{id}/split", "post /api/v1/recordings/{id}/chapters",
	} {
		method, path, _ := strings.Cut(route, " ")
		if _, ok := doc.Paths[path][method]; !ok {
			t.Errorf("openapi.yaml lacks %s", route)
		}
	}
	for name, v := range map[string]any{"StartRequest": service.StartRequest{}, "Recording": service.RecordingJSON{},
		"Stats": service.StatsJSON{}, "File": service.FileJSON{}, "Track": service.TrackJSON{}} {
		var props []string
		for p := range doc.Components.Schemas[name].Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if got := jsonFields(reflect.TypeOf(v)); !slices.Equal(got, props) {
			t.Errorf("schema %s has %v, the type %v", name, props, got)
		}
	}
}

// jsonFields lists the JSON names of t's fields, embedded structs
// flattened.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
