package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
)

// s3Statement builds one explicit, least-privilege S3 statement.
func s3Statement(sid string, actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: s(sid), Effect: awsiam.Effect_ALLOW, Actions: strs(actions...), Resources: &resources,
	})
}

// s3Deny is an explicit Deny: it wins over any Allow of the role.
func s3Deny(sid string, actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: s(sid), Effect: awsiam.Effect_DENY, Actions: strs(actions...), Resources: &resources,
	})
}

// recipeStmts let hashcheck read the recipe file of the recipe context
// value, that object or parameter alone (a SecureString also needs the
// key's kms:Decrypt, granted by the key policy, not here).
func (st *Stack) recipeStmts() []awsiam.PolicyStatement {
	kind, name, _ := recipeResource(st.Config.Recipe) // validated with the config
	switch kind {
	case "s3":
		return []awsiam.PolicyStatement{s3Statement("ReadRecipe", []string{"s3:GetObject"}, s("arn:"+*awscdk.Aws_PARTITION()+":s3:::"+name))}
	case "ssm":
		return []awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: s("ReadRecipe"), Actions: strs("ssm:GetParameter"),
			Resources: arns(s("arn:" + *awscdk.Aws_PARTITION() + ":ssm:" + *awscdk.Aws_REGION() + ":" + *awscdk.Aws_ACCOUNT_ID() + ":parameter/" + name)),
		})}
	}
	return nil
}

func (st *Stack) sourceObjects() []*string {
	var out []*string
	for _, p := range st.Config.SourcePrefixes {
		out = append(out, st.Source.ArnForObjects(s(p+"*")))
	}
	return out
}

func regexpQuote(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `.`, `\.`, `+`, `\+`, `(`, `\(`, `)`, `\)`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`, `|`, `\|`)
	return r.Replace(p)
}
