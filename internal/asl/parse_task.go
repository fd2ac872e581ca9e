package asl

import "fmt"

func parseTask(st *State, p *fieldParser) error {
	st.Resource = p.str("Resource")
	if st.Resource == "" && p.err == nil {
		return fmt.Errorf("missing required field Resource")
	}
	if t := p.integer("TimeoutSeconds"); t != nil {
		if *t <= 0 {
			return fmt.Errorf("TimeoutSeconds must be positive")
		}
		st.TimeoutSeconds = *t
	}
	if h := p.integer("HeartbeatSeconds"); h != nil {
		if *h <= 0 {
			return fmt.Errorf("HeartbeatSeconds must be positive")
		}
		st.HeartbeatSeconds = *h
	}
	st.TimeoutSecondsPath = p.refPath("TimeoutSecondsPath")
	st.HeartbeatSecondsPath = p.refPath("HeartbeatSecondsPath")
	st.Credentials = p.o.m["Credentials"]
	if p.o.has("TimeoutSeconds") && p.o.has("TimeoutSecondsPath") {
		return fmt.Errorf("TimeoutSeconds and TimeoutSecondsPath are mutually exclusive")
	}
	if p.o.has("HeartbeatSeconds") && p.o.has("HeartbeatSecondsPath") {
		return fmt.Errorf("HeartbeatSeconds and HeartbeatSecondsPath are mutually exclusive")
	}
	if st.HeartbeatSeconds > 0 && st.TimeoutSeconds > 0 && st.HeartbeatSeconds >= st.TimeoutSeconds {
		return fmt.Errorf("HeartbeatSeconds must be smaller than TimeoutSeconds")
	}
	return nil
}
