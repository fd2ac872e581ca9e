package main

import (
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// foldMapper reads a string flag whose enum tag lists its values
// (internal/config's type:"fold"), matching them without regard to case
// and storing the listed spelling (geoparquet → GeoParquet); kong's enum
// check then reports a value that matches none, in one line.
type foldMapper struct{}

func (foldMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var text string
	if err := ctx.Scan.PopValueInto("value", &text); err != nil {
		return err
	}
	for _, e := range ctx.Value.EnumSlice() {
		if strings.EqualFold(e, text) {
			text = e
			break
		}
	}
	target.SetString(text)
	return nil
}
