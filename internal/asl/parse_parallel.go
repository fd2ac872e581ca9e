package asl

import (
	"encoding/json"
	"fmt"
)

func parseParallel(st *State, p *fieldParser, where string) error {
	var branches []json.RawMessage
	if err := p.decode("Branches", &branches); err != nil {
		return err
	}
	if len(branches) == 0 {
		return fmt.Errorf("Branches must be a non-empty array")
	}
	for i, b := range branches {
		sub, err := parseMachine(b, fmt.Sprintf("%sstate %q > %s > ", where, st.Name, branchLabel(i)), false)
		if err != nil {
			return &nestedError{err}
		}
		st.Branches = append(st.Branches, sub)
	}
	return nil
}
