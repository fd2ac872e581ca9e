package asl

import (
	"encoding/json"
	"fmt"
	"strings"
)

// evalEnv is what a payload template, path or intrinsic is evaluated
// against: the effective input ($) and the context object ($$).
type evalEnv struct {
	input any
	ctx   any
	// mkCtx builds ctx on first use (context): most states never read $$.
	mkCtx func() any
	rand  func() float64
}

// with is env evaluating against input v, with the same context object
// (still to be built, if nobody asked for it yet) and random source.
func (env *evalEnv) with(v any) *evalEnv {
	return &evalEnv{input: v, ctx: env.ctx, mkCtx: env.mkCtx, rand: env.rand}
}

// context is the context object ($$), built when first asked for.
func (env *evalEnv) context() any {
	if env.ctx == nil && env.mkCtx != nil {
		env.ctx, env.mkCtx = env.mkCtx(), nil
	}
	return env.ctx
}

func (env *evalEnv) lookup(p *jsonPath) (any, error) {
	root := env.input
	if p.context {
		root = env.context()
	}
	v, ok := p.get(root)
	if !ok {
		what := "input"
		if p.context {
			what = "context object"
		}
		return nil, fmt.Errorf("the JSONPath '%s' could not be found in the %s '%s'", p.src, what, encodeValue(root))
	}
	return v, nil
}

// dynamic evaluates the value of a field whose name ends in ".$": a path
// on the input, a path on the context object, or an intrinsic function.
func (env *evalEnv) dynamic(s string) (any, error) {
	if strings.HasPrefix(s, "$") {
		p, err := compilePath(s)
		if err != nil {
			return nil, err
		}
		return env.lookup(p)
	}
	c, err := compileIntrinsic(s)
	if err != nil {
		return nil, err
	}
	return c.eval(env)
}

// expandTemplate evaluates a payload template (Parameters, ResultSelector,
// ItemSelector, BatchInput, ...). Errors are States.Runtime failures.
func (env *evalEnv) expandTemplate(raw json.RawMessage) (any, error) {
	tmpl, err := decodeValue(raw)
	if err != nil {
		return nil, err
	}
	return env.expand(tmpl)
}

func (env *evalEnv) expand(tmpl any) (any, error) {
	switch t := tmpl.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			if name, ok := strings.CutSuffix(k, ".$"); ok {
				s, _ := v.(string) // validated by Parse
				val, err := env.dynamic(s)
				if err != nil {
					return nil, fmt.Errorf("field '%s': %w", k, err)
				}
				out[name] = val
				continue
			}
			val, err := env.expand(v)
			if err != nil {
				return nil, err
			}
			out[k] = val
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			val, err := env.expand(v)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}
	return tmpl, nil
}

// validateTemplate checks a payload template at parse time: every ".$"
// field must hold a valid path or intrinsic function.
func validateTemplate(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	tmpl, err := decodeValue(raw)
	if err != nil {
		return err
	}
	return validateTemplateValue(tmpl)
}

func validateTemplateValue(tmpl any) error {
	switch t := tmpl.(type) {
	case map[string]any:
		for k, v := range t {
			if strings.HasSuffix(k, ".$") {
				s, ok := v.(string)
				if !ok {
					return fmt.Errorf("field %q must be a string path or intrinsic function", k)
				}
				if err := validateDynamic(s); err != nil {
					return fmt.Errorf("field %q: %w", k, err)
				}
				continue
			}
			if err := validateTemplateValue(v); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range t {
			if err := validateTemplateValue(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateDynamic(s string) error {
	if strings.HasPrefix(s, "$") {
		_, err := compilePath(s)
		return err
	}
	if strings.HasPrefix(s, "States.") {
		_, err := compileIntrinsic(s)
		return err
	}
	return fmt.Errorf("%q is neither a JSONPath nor an intrinsic function", s)
}

// inputPath applies InputPath: absent keeps the input, null gives {}.
func inputPath(pf PathField, input any, env *evalEnv) (any, error) {
	return selectPath("InputPath", pf, input, env)
}

// outputPath applies OutputPath with the same rules as InputPath.
func outputPath(pf PathField, output any, env *evalEnv) (any, error) {
	return selectPath("OutputPath", pf, output, env)
}

func selectPath(field string, pf PathField, v any, env *evalEnv) (any, error) {
	if !pf.Set {
		return v, nil
	}
	if pf.Null {
		return map[string]any{}, nil
	}
	p, err := compilePath(pf.Path)
	if err != nil {
		return nil, err
	}
	sub := env.with(v)
	out, err := sub.lookup(p)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", field, err)
	}
	return out, nil
}

// resultPath places result into input: absent or "$" replaces the input,
// null discards the result, a path merges it in, creating objects.
func resultPath(pf PathField, input, result any) (any, error) {
	switch {
	case !pf.Set:
		return result, nil
	case pf.Null:
		return input, nil
	}
	p, err := compileReferencePath(pf.Path)
	if err != nil {
		return nil, err
	}
	if p.context {
		return nil, fmt.Errorf("ResultPath %q cannot refer to the context object", pf.Path)
	}
	return p.set(input, result)
}
