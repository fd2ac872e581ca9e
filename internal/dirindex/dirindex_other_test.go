//go:build !linux

package dirindex

func kept() bool { return false }

func isKept(string) bool { return false }
