package main

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// checkS3Locations refuses, before any command runs, every flag or
// argument value that begins with "s3:" in any case but is not a
// well-formed s3://BUCKET[/KEY]: "s3:/b/out", "s3:b/out" or "S3://b/x"
// would otherwise be taken as a local path and a run would write into
// ./s3:… and succeed. Every string value of the command is looked at
// (--dest, sources, --manifest, --recipe, values from the environment),
// so a flag added later is covered too.
func checkS3Locations(k *kong.Context) error {
	check := func(what string, v reflect.Value) error {
		var vals []string
		switch {
		case v.Kind() == reflect.String:
			vals = []string{v.String()}
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			for i := range v.Len() {
				vals = append(vals, v.Index(i).String())
			}
		}
		for _, s := range vals {
			if err := s3Location(s); err != nil {
				return usagef("%s %s: %v", what, s, err)
			}
		}
		return nil
	}
	for _, f := range k.Flags() {
		if f.Target.IsValid() {
			if err := check("--"+f.Name, f.Target); err != nil {
				return err
			}
		}
	}
	if n := k.Selected(); n != nil {
		for _, p := range n.Positional {
			if p.Target.IsValid() {
				if err := check(p.Name, p.Target); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// s3Location checks a value that looks like an S3 location: nil for one
// that does not begin with "s3:" (any case) and for a well-formed
// s3://BUCKET[/KEY], else what is wrong with it.
func s3Location(s string) error {
	if len(s) < 3 || !strings.EqualFold(s[:3], "s3:") {
		return nil
	}
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		switch {
		case strings.HasPrefix(strings.ToLower(s), "s3://"):
			return fmt.Errorf("the scheme is written s3:// in lower case")
		default:
			return fmt.Errorf("an S3 location is s3://BUCKET[/PREFIX] (two slashes after s3:)")
		}
	}
	bucket, _, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return fmt.Errorf("no bucket: want s3://BUCKET[/PREFIX]")
	}
	if why := badBucketName(bucket); why != "" {
		return fmt.Errorf("bucket name %q %s", bucket, why)
	}
	return nil
}

// badBucketName says why name breaks S3's general purpose bucket naming
// rules (docs/decisions/0104), or "". The reserved prefixes and suffixes
// of those rules are not checked: an access point alias (…-s3alias) is
// used where a bucket name is.
func badBucketName(name string) string {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Sprintf("has %d characters: a bucket name has 3 to 63", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return fmt.Sprintf("holds %q: a bucket name has only lower-case letters, digits, dots and hyphens", r)
		}
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return "must begin and end with a letter or a digit"
	}
	if strings.Contains(name, "..") {
		return "has two adjacent dots"
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "is an IP address, which a bucket name must not be"
	}
	return ""
}
