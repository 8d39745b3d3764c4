package redact

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// treeSeeds are JSON texts whose decoding and encoding have edge cases:
// escapes, surrogates lone and paired, invalid UTF-8, U+2028, control
// characters, numbers, duplicate keys, nesting, text after a value.
var treeSeeds = []string{
	`{"a":1,"b":[true,false,null,-0.5e+10,"x"],"c":{}}`, `[]`, `{}`, `""`, `0`, `-1.25E-3`, `123456789012345678901234567890`,
	`"\u00e9\ud83d\ude00\ud800\udc00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800x"`, `"a\"b\\c\/d\b\f\n\r\t"`,
	"\"\xff\xfeok\xc3\"", `"\u2028\u2029 < > &"`, "\"\u2028\"", `"\u0000\u001f\u007f"`,
	`{"k":1,"k":2}`, ` { "a" : [ 1 , 2 ] } `, `{"a":1} {"b":2}`, `{"a":1} trailing`, `[1,2`, `{"a"}`, `nul`, `"abc`,
	`{"Password":"hunter2","nested":[["token","t"],{"name":"DB_PASSWORD","value":"v"}]}`,
	"{\"\xff\":\"\\u00ff\"}", `[[[[[[[[[[[]]]]]]]]]]]`,
}

// TestTreeDecodesAndEncodesAsEncodingJSON checks decodeTree and
// appendTree against encoding/json's decoder with UseNumber and its
// encoder without HTML escaping.
func TestTreeDecodesAndEncodesAsEncodingJSON(t *testing.T) {
	for _, s := range treeSeeds {
		checkTree(t, []byte(s))
	}
}

func FuzzTree(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkTree)
}

func checkTree(t *testing.T, raw []byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var want any
	wantErr := dec.Decode(&want)
	got, ok := decodeTree(raw)
	if ok != (wantErr == nil) {
		t.Fatalf("%q: decoded %v; encoding/json: %v", raw, ok, wantErr)
	}
	if !ok {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %#v; encoding/json %#v", raw, got, want)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(want); err != nil {
		t.Fatal(err)
	}
	wantOut := bytes.TrimRight(buf.Bytes(), "\n")
	gotOut, ok := appendTree(nil, got)
	if !ok || !bytes.Equal(gotOut, wantOut) {
		t.Fatalf("%q: encoded %q (%v); encoding/json %q", raw, gotOut, ok, wantOut)
	}
}
