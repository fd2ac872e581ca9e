package asl_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/geomigrate/geomigrate/internal/asl"
)

// A definition is parsed strictly, then run by an executor whose Lambda
// tasks are Go functions.
func ExampleParse() {
	def := []byte(`{
	  "StartAt": "Double",
	  "States": {
	    "Double": {
	      "Type": "Task",
	      "Resource": "arn:aws:states:::lambda:invoke",
	      "Parameters": {"FunctionName": "double", "Payload.$": "$"},
	      "ResultSelector": {"n.$": "$.Payload"},
	      "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}],
	      "Next": "Done"
	    },
	    "Done": {"Type": "Succeed"}
	  }
	}`)
	sm, err := asl.Parse(def)
	if err != nil {
		fmt.Println(err)
		return
	}
	double := func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		var n int
		if err := json.Unmarshal(in, &n); err != nil {
			return nil, err
		}
		return json.Marshal(2 * n)
	}
	res, err := asl.NewExecutor(sm, asl.WithLambda("double", double)).Run(context.Background(), "example", json.RawMessage(`21`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, string(res.Output))

	_, err = asl.Parse([]byte(`{"StartAt": "Missing", "States": {"Done": {"Type": "Succeed"}}}`))
	fmt.Println(err != nil)
	// Output:
	// SUCCEEDED {"n":42}
	// true
}
