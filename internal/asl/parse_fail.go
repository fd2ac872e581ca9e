package asl

import "fmt"

func parseFail(st *State, p *fieldParser) error {
	st.Error = p.str("Error")
	st.Cause = p.str("Cause")
	st.ErrorPath = p.str("ErrorPath")
	st.CausePath = p.str("CausePath")
	for _, pair := range [][2]string{{"Error", "ErrorPath"}, {"Cause", "CausePath"}} {
		if p.o.has(pair[0]) && p.o.has(pair[1]) {
			return fmt.Errorf("%s and %s are mutually exclusive", pair[0], pair[1])
		}
	}
	for _, s := range []string{st.ErrorPath, st.CausePath} {
		if s != "" {
			if err := validateDynamic(s); err != nil {
				return err
			}
		}
	}
	return nil
}
