/**
 * Synthesis in tests without CDK's own CloudFormation validation.
 *
 * aws-cdk-lib (2.27x) checks every synthesized template against the
 * CloudFormation resource schemas with `@aws/cloudformation-validate`, a
 * WebAssembly rule engine, unless `CDK_VALIDATION=false`: about 9 s of CPU
 * per synthesis of Cairn's stack here, against 0.75 s without it. The test
 * suites synthesize the stack and its parts dozens of times to read their
 * templates; cairn-stack.test.ts runs the validation once, over the whole
 * stack, and fails on any finding. `cdk synth` and `cdk deploy` keep it.
 */
process.env.CDK_VALIDATION ??= 'false';
