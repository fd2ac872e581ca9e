// Runs dynalite (the DynamoDB stand-in of the integration tests) as its own
// cli.js does, surviving clients that hang up in the middle of a request.
//
// dynalite rethrows a request stream's error (index.js: req.on('error',
// function (err) { throw err })), so a client killed while sending a body
// (the chaos suite's kill -9, a test's cancelled context) takes the whole
// server down with "Error: aborted" (ECONNRESET), and every later test
// fails with "connection refused". DynamoDB itself drops such a request and
// carries on; so does this wrapper. Any other uncaught error still ends the
// process, as before.
//
// dynalite logs no requests. With DYNALITE_REQUEST_LOG=FILE each request's
// operation (the X-Amz-Target after its "DynamoDB_20120810." prefix) is
// appended to FILE, one a line, as it arrives: scripts/bench-e2e counts a
// run's DynamoDB requests from it.
//
// Usage: NODE_PATH=.tools/node_modules [DYNALITE_REQUEST_LOG=FILE] node scripts/dynalite-server.js [dynalite flags]
'use strict'

const argv = require('minimist')(process.argv.slice(2))

process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
    console.error('dynalite-server: a client hung up mid-request; request dropped')
    return
  }
  console.error(err)
  process.exit(1)
})

const server = require('dynalite')(argv)
if (process.env.DYNALITE_REQUEST_LOG) {
  const fs = require('fs')
  const fd = fs.openSync(process.env.DYNALITE_REQUEST_LOG, 'a')
  server.on('request', (req) => {
    const target = String(req.headers['x-amz-target'] || '-')
    fs.writeSync(fd, target.slice(target.indexOf('.') + 1) + '\n')
  })
}
server.listen(argv.port || 4567, argv.host || undefined, () => {
  console.log('Dynalite listening at: http://%s:%s', argv.host || 'localhost', server.address().port)
})
