// Command sha256file prints the SHA-256 of a local file computed the way
// HashCheck hashes a source: internal/fingerprint.SHA256 through the
// directory store, default options. It is the subject of make bench's
// SHA-256 figure (against openssl dgst -sha256), a binary of its own so
// that its start-up is not the CLI's (which loads GDAL and its libraries).
//
//	sha256file FILE
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/geomigrate/geomigrate/internal/fingerprint"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sha256file FILE")
		os.Exit(2)
	}
	sum, err := hashFile(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sha256file:", err)
		os.Exit(1)
	}
	fmt.Println(sum)
}

func hashFile(ctx context.Context, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	store, err := dirstore.New("", dirstore.WithBucketDir("src", filepath.Dir(abs)))
	if err != nil {
		return "", err
	}
	return fingerprint.SHA256(ctx, store, "src", filepath.Base(abs), -1, fingerprint.Options{})
}
