/// Parses and verifies a batch of records on several cores at once.
///
/// Signature verification is the most expensive step of ingesting records from a peer, so a batch is split into
/// one contiguous slice per core and the slices are verified in parallel. The results keep the input order.
public enum BatchVerifier {
    /// One result per input, in input order.
    public static func verify(_ batch: [[UInt8]], concurrency: Int = 2) async -> [Result<VerifiedRecord, RecordError>] {
        let workers = max(1, min(concurrency, batch.count))
        guard workers > 1 else { return batch.map(verifyOne) }
        let sliceSize = (batch.count + workers - 1) / workers
        return await withTaskGroup(of: (Int, [Result<VerifiedRecord, RecordError>]).self) { group in
            for worker in 0..<workers {
                let range = (worker * sliceSize)..<min(batch.count, (worker + 1) * sliceSize)
                let slice = Array(batch[range])
                group.addTask { (worker, slice.map(verifyOne)) }
            }
            var slices = [[Result<VerifiedRecord, RecordError>]](repeating: [], count: workers)
            for await (worker, results) in group { slices[worker] = results }
            return slices.flatMap { $0 }
        }
    }

    /// Every record of the batch verified, in input order; or the first failure, in input order.
    public static func verifyAll(
        _ batch: [[UInt8]],
        concurrency: Int = 2
    ) async -> Result<[VerifiedRecord], RecordError> {
        let results = await verify(batch, concurrency: concurrency)
        return Result { () throws(RecordError) in try results.map { result throws(RecordError) in try result.get() } }
    }

    static func verifyOne(_ bytes: [UInt8]) -> Result<VerifiedRecord, RecordError> {
        Result { () throws(RecordError) in try SignedRecord(bytes: bytes).verify() }
    }
}
