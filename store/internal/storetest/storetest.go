// Package storetest is the conformance suite every store.Store
// implementation must pass, and helpers for cross-process contention tests
// and benchmarks.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			st, err := memory.New(nil) // a fresh, empty store of yours
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { st.Close() })
//			return st
//		})
//	}
//
// Run runs every subtest on a store of its own. Contend and CheckContention
// race participants (goroutines, pools or processes) on one database and
// check that each key was claimed once and each counter value handed out
// once; BenchClaimComplete measures the journal's two writes per call.
package storetest

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Opener returns a fresh, empty store for one test. It registers the
// store's Close with t.Cleanup itself.
type Opener func(t *testing.T) store.Store

// Run runs the conformance suite against stores made by open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Servers", testServers},
		{"ServerRefusesSecrets", testServerRefusesSecrets},
		{"Baseline", testBaseline},
		{"BaselineImmutableUnderRepeatedSave", testBaselineImmutable},
		{"BaselineConcurrentSave", testBaselineConcurrent},
		{"BaselineClearAndVersion", testBaselineClear},
		{"BaselineKinds", testBaselineKinds},
		{"BaselineContracts", testBaselineContracts},
		{"BaselineInvalid", testBaselineInvalid},
		{"ReplaceBaseline", testReplaceBaseline},
		{"ObserveListing", testObserveListing},
		{"ObserveListingRace", testObserveRace},
		{"OpenObservations", testOpenObservations},
		{"DriftHeads", testDriftHeads},
		{"DeleteServerObservations", testDeleteServerObservations},
		{"TrustListing", testTrustListing},
		{"TrustListingRace", testTrustListingRace},
		{"ClaimAndGet", testClaim},
		{"ClaimValidation", testClaimValidation},
		{"ClaimRace", testClaimRace},
		{"Complete", testComplete},
		{"TakeOver", testTakeOver},
		{"TakeOverRace", testTakeOverRace},
		{"MarkInDoubt", testMarkInDoubt},
		{"RenewLease", testRenewLease},
		{"ListRunsAndRecords", testListRuns},
		{"Purge", testPurge},
		{"Sweep", testSweep},
		{"OldestStarted", testOldestStarted},
		{"Counters", testCounters},
		{"CountersConcurrent", testCountersConcurrent},
		{"CounterWindowRestart", testCounterWindow},
		{"DerivedCounterKeys", testDerivedCounterKeys},
		{"Approvals", testApprovals},
		{"ApprovalDecideRace", testApprovalRace},
		{"ApprovalUsedOnce", testApprovalOnce},
		{"ApprovalExpiry", testApprovalExpiry},
		{"ApprovalPendingBound", testApprovalBound},
		{"ApprovalCreateRace", testApprovalCreateRace},
		{"ApprovalContract", testApprovalContract},
		{"Timestamps", testTimestamps},
		{"Executors", testExecutors},
		{"ExecutorValidation", testExecutorValidation},
		{"MarkInDoubtFromDead", testMarkInDoubtFromDead},
		{"TakeOverFromDead", testTakeOverFromDead},
		{"TakeOverFromDeadRace", testTakeOverFromDeadRace},
		{"SweepExecutors", testSweepExecutors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}
