package asl

import (
	"encoding/json"
	"fmt"
)

func parseMap(st *State, p *fieldParser, where string) error {
	o := p.o
	if o.has("Iterator") == o.has("ItemProcessor") {
		return fmt.Errorf("must have exactly one of ItemProcessor or Iterator")
	}
	if o.has("Parameters") && o.has("ItemSelector") {
		return fmt.Errorf("Parameters and ItemSelector are mutually exclusive")
	}
	field := "ItemProcessor"
	if o.has("Iterator") {
		field = "Iterator"
	}
	sub, err := parseMachine(o.m[field], fmt.Sprintf("%sstate %q > %s > ", where, st.Name, field), field == "ItemProcessor")
	if err != nil {
		return &nestedError{err}
	}
	st.ItemProcessor = sub
	if st.ItemSelector = p.template("ItemSelector"); st.ItemSelector == nil {
		st.ItemSelector = st.Parameters
	}
	st.Parameters = nil
	st.ItemsPath = p.refPath("ItemsPath")
	st.Label = p.str("Label")
	if mc := p.integer("MaxConcurrency"); mc != nil {
		if *mc < 0 {
			return fmt.Errorf("MaxConcurrency must not be negative")
		}
		st.MaxConcurrency = *mc
	}
	st.MaxConcurrencyPath = p.refPath("MaxConcurrencyPath")
	if pct := p.number("ToleratedFailurePercentage"); pct != nil {
		if *pct < 0 || *pct > 100 {
			return fmt.Errorf("ToleratedFailurePercentage must be between 0 and 100")
		}
		st.ToleratedFailurePercentage = pct
	}
	st.ToleratedFailurePercentagePath = p.refPath("ToleratedFailurePercentagePath")
	if n := p.integer("ToleratedFailureCount"); n != nil {
		if *n < 0 {
			return fmt.Errorf("ToleratedFailureCount must not be negative")
		}
		st.ToleratedFailureCount = n
	}
	st.ToleratedFailureCountPath = p.refPath("ToleratedFailureCountPath")
	if p.err != nil {
		return p.err
	}
	if o.has("ItemReader") {
		if st.ItemReader, err = parseItemReader(o.m["ItemReader"]); err != nil {
			return err
		}
	}
	if o.has("ItemBatcher") {
		if st.ItemBatcher, err = parseItemBatcher(o.m["ItemBatcher"]); err != nil {
			return err
		}
	}
	if o.has("ResultWriter") {
		if st.ResultWriter, err = parseResultWriter(o.m["ResultWriter"]); err != nil {
			return err
		}
	}
	distributed := sub.ProcessorConfig != nil && sub.ProcessorConfig.Mode == "DISTRIBUTED"
	if !distributed {
		for _, k := range []string{"ItemReader", "ItemBatcher", "ResultWriter", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "ToleratedFailureCount", "ToleratedFailureCountPath", "Label"} {
			if o.has(k) {
				return fmt.Errorf("%s requires ItemProcessor.ProcessorConfig.Mode DISTRIBUTED", k)
			}
		}
	}
	return nil
}

func parseItemReader(raw json.RawMessage) (*ItemReader, error) {
	r, err := decodeObj(raw)
	if err == nil {
		err = r.checkKeys([]string{"Resource", "Parameters", "ReaderConfig"})
	}
	if err != nil {
		return nil, fmt.Errorf("ItemReader: %w", err)
	}
	rp := &fieldParser{o: r}
	ir := &ItemReader{Resource: rp.str("Resource"), Parameters: rp.template("Parameters"), ReaderConfig: r.m["ReaderConfig"]}
	if rp.err == nil && ir.Resource == "" {
		rp.err = fmt.Errorf("missing required field Resource")
	}
	if rp.err != nil {
		return nil, fmt.Errorf("ItemReader: %w", rp.err)
	}
	return ir, nil
}

func parseItemBatcher(raw json.RawMessage) (*ItemBatcher, error) {
	b, err := decodeObj(raw)
	if err == nil {
		err = b.checkKeys([]string{"MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath", "BatchInput"})
	}
	if err != nil {
		return nil, fmt.Errorf("ItemBatcher: %w", err)
	}
	bp := &fieldParser{o: b}
	ib := &ItemBatcher{BatchInput: bp.template("BatchInput"), MaxItemsPerBatchPath: bp.refPath("MaxItemsPerBatchPath"), MaxInputBytesPerBatchPath: bp.refPath("MaxInputBytesPerBatchPath")}
	if n := bp.integer("MaxItemsPerBatch"); n != nil {
		if *n <= 0 {
			bp.fail(fmt.Errorf("MaxItemsPerBatch must be positive"))
		}
		ib.MaxItemsPerBatch = *n
	}
	if n := bp.integer("MaxInputBytesPerBatch"); n != nil {
		if *n <= 0 {
			bp.fail(fmt.Errorf("MaxInputBytesPerBatch must be positive"))
		}
		ib.MaxInputBytesPerBatch = *n
	}
	if bp.err == nil && !b.has("MaxItemsPerBatch") && !b.has("MaxItemsPerBatchPath") && !b.has("MaxInputBytesPerBatch") && !b.has("MaxInputBytesPerBatchPath") {
		bp.err = fmt.Errorf("needs MaxItemsPerBatch or MaxInputBytesPerBatch")
	}
	if bp.err != nil {
		return nil, fmt.Errorf("ItemBatcher: %w", bp.err)
	}
	return ib, nil
}

func parseResultWriter(raw json.RawMessage) (*ResultWriter, error) {
	w, err := decodeObj(raw)
	if err == nil {
		err = w.checkKeys([]string{"Resource", "Parameters", "WriterConfig"})
	}
	if err != nil {
		return nil, fmt.Errorf("ResultWriter: %w", err)
	}
	wp := &fieldParser{o: w}
	rw := &ResultWriter{Resource: wp.str("Resource"), Parameters: wp.template("Parameters"), WriterConfig: w.m["WriterConfig"]}
	if wp.err != nil {
		return nil, fmt.Errorf("ResultWriter: %w", wp.err)
	}
	return rw, nil
}

// parseProcessorConfig parses a Map item processor's ProcessorConfig.
func parseProcessorConfig(raw json.RawMessage) (*ProcessorConfig, error) {
	pc, err := decodeObj(raw)
	if err == nil {
		err = pc.checkKeys([]string{"Mode", "ExecutionType"})
	}
	if err != nil {
		return nil, fmt.Errorf("ProcessorConfig: %w", err)
	}
	cfg := &ProcessorConfig{}
	cfg.Mode, _ = pc.str("Mode")
	cfg.ExecutionType, _ = pc.str("ExecutionType")
	if cfg.Mode == "" {
		cfg.Mode = "INLINE"
	}
	if cfg.Mode != "INLINE" && cfg.Mode != "DISTRIBUTED" {
		return nil, fmt.Errorf("ProcessorConfig.Mode must be INLINE or DISTRIBUTED, got %q", cfg.Mode)
	}
	if cfg.ExecutionType != "" && cfg.ExecutionType != "STANDARD" && cfg.ExecutionType != "EXPRESS" {
		return nil, fmt.Errorf("ProcessorConfig.ExecutionType must be STANDARD or EXPRESS, got %q", cfg.ExecutionType)
	}
	if cfg.Mode == "DISTRIBUTED" && cfg.ExecutionType == "" {
		return nil, fmt.Errorf("ProcessorConfig.ExecutionType is required in DISTRIBUTED mode")
	}
	return cfg, nil
}
