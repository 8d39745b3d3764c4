package cli

// KnownVariables is knownVariables, for the tests of package cli_test.
var KnownVariables = knownVariables
