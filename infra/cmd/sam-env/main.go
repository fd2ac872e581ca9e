// Command sam-env writes the `sam local invoke --env-vars` file for a synthesized template and
// prints the sam command line that runs one function with it (`make sam-invoke` runs both).
//
//	sam-env -template cdk.out/Geomigrate.template.json -function convert -event events/x.json \
//	        -env-out cdk.out/sam-env.json [-resources stack-resources.json] [-name StateTable=jobs] \
//	        [-set GEOMIGRATE_DEST_BUCKET=dst] [-region eu-west-1 -account 123456789012 -stack-name Geomigrate]
//
// Names come, first to last: -set (a variable's value), -name (a resource's physical ID, by
// construct or logical ID), -resources (`aws cloudformation describe-stack-resources` output of a
// deployed stack), the name the template fixes, a default ("<stack>-<construct-id>", reported).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/infra/samenv"
)

type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(v string) error {
	for _, f := range strings.Fields(v) {
		k, val, ok := strings.Cut(f, "=")
		if !ok || k == "" || val == "" {
			return fmt.Errorf("%q: want KEY=VALUE", f)
		}
		p[k] = val
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sam-env:", err)
		os.Exit(1)
	}
}

func run() error {
	names, set := pairs{}, pairs{}
	tpl := flag.String("template", "", "synthesized template (cdk.out/<stack>.template.json)")
	fn := flag.String("function", "", "function: hashcheck|convert|classify|promote, a construct ID or a logical ID")
	event := flag.String("event", "", "event file for sam local invoke")
	envOut := flag.String("env-out", "", "where to write the --env-vars file")
	resources := flag.String("resources", "", "optional: `aws cloudformation describe-stack-resources` JSON of a deployed stack")
	region := flag.String("region", firstNonEmpty(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1"), "region for ARNs and queue URLs")
	account := flag.String("account", "123456789012", "account ID for ARNs and queue URLs")
	stack := flag.String("stack-name", "Geomigrate", "stack name (prefix of default names)")
	flag.Var(names, "name", "ConstructOrLogicalID=physical-id (repeatable, or space-separated)")
	flag.Var(set, "set", "VARIABLE=value for every function (repeatable, or space-separated)")
	flag.Parse()
	if *tpl == "" || *fn == "" || *event == "" || *envOut == "" {
		flag.Usage()
		return fmt.Errorf("-template, -function, -event and -env-out are required")
	}
	t, err := samenv.Load(*tpl)
	if err != nil {
		return err
	}
	id, err := t.FunctionID(*fn)
	if err != nil {
		return err
	}
	physical := map[string]string{}
	if *resources != "" {
		if physical, err = samenv.LoadStackResources(*resources); err != nil {
			return err
		}
	}
	for k, v := range names {
		physical[k] = v
	}
	res, err := t.Resolve(samenv.Names{Region: *region, Account: *account, StackName: *stack, Physical: physical, Set: set})
	if err != nil {
		return err
	}
	b, err := res.EnvFile()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*envOut), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*envOut, b, 0o644); err != nil {
		return err
	}
	for _, d := range res.Defaulted {
		fmt.Fprintf(os.Stderr, "sam-env: default name (give the real one with SAM_NAMES=<ConstructID>=<name> or SAM_STACK_RESOURCES): %s\n", d)
	}
	fmt.Fprintf(os.Stderr, "sam-env: wrote %s (%s: %v)\n", *envOut, id, res.Env[id])
	fmt.Println(samenv.ShellJoin(samenv.Command(*tpl, *event, *envOut, id, *region)))
	return nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
