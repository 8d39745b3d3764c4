package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"
)

// inputSchema returns the JSON schema of a tool's input type: one inline
// object (no $ref or $defs) that rejects unknown properties. Its string
// arguments take no empty string (minLength 1), which decodeArgs refuses.
func inputSchema(v any) json.RawMessage {
	return reflectSchema(v, false)
}

// outputSchema returns the JSON schema of a tool's output type: one inline
// object. Outputs leave additionalProperties open, so that a client built
// against this version still validates what a newer server adds.
func outputSchema(v any) json.RawMessage {
	return reflectSchema(v, true)
}

func reflectSchema(v any, open bool) json.RawMessage {
	r := &jsonschema.Reflector{
		DoNotReference:            true,
		ExpandedStruct:            true,
		Anonymous:                 true,
		AllowAdditionalProperties: open,
		Mapper:                    mapType,
	}
	s := r.Reflect(v)
	s.Version = "" // the MCP default dialect (2020-12); clients need no $schema
	if s.Type != "object" {
		panic(fmt.Sprintf("tools: schema of %T is %q, not an object", v, s.Type))
	}
	if !open && s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if p.Value.Type == "string" {
				one := uint64(1)
				p.Value.MinLength = &one
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tools: marshal schema of %T: %v", v, err))
	}
	return b
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// mapType gives the schemas invopop has no good answer for: any JSON value
// for json.RawMessage (payloads, headers, audit arguments) rather than the
// empty schema with a bare description.
func mapType(t reflect.Type) *jsonschema.Schema {
	if t == rawMessageType {
		return &jsonschema.Schema{}
	}
	return nil
}

// boolPtr is mcp.ToBoolPtr under a shorter name.
func boolPtr(b bool) *bool { return mcp.ToBoolPtr(b) }

// annotations of the two kinds of tools. pgbus talks only to its own
// database, so no tool is open-world.
func readAnnotations(title string) mcp.ToolAnnotation {
	return mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    boolPtr(true),
		DestructiveHint: boolPtr(false),
		IdempotentHint:  boolPtr(true),
		OpenWorldHint:   boolPtr(false),
	}
}

func writeAnnotations(title string, destructive, idempotent bool) mcp.ToolAnnotation {
	return mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    boolPtr(false),
		DestructiveHint: boolPtr(destructive),
		IdempotentHint:  boolPtr(idempotent),
		OpenWorldHint:   boolPtr(false),
	}
}

// newTool builds a tool from its input and output types.
func newTool(name, description string, ann mcp.ToolAnnotation, in, out any) mcp.Tool {
	return mcp.Tool{
		Name:            name,
		Title:           ann.Title,
		Description:     description,
		RawInputSchema:  inputSchema(in),
		RawOutputSchema: outputSchema(out),
		Annotations:     ann,
	}
}
