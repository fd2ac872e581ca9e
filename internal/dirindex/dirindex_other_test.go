//go:build !linux

package dirindex

func kept(string) bool { return false }

func isKept(string) bool { return false }
