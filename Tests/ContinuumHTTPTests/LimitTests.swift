import Testing

@testable import ContinuumHTTP

/// The limits' defaults, and the messages of their 413 (Docs/API.md, "Limits"); the running node is tested in
/// SyncTests (APITests).
@Suite("HTTP limits")
struct LimitTests {
    @Test func theDefaults() {
        let configuration = APIConfiguration()
        #expect(configuration.headerTimeout == .seconds(10))
        #expect(BodyLimit.json.bodyBytes == 1_048_576)
        #expect(BodyLimit.upload(configuration).bytes == 50 * 1_048_576)
        #expect(BodyLimit.upload(configuration).bodyBytes == 51 * 1_048_576)
    }

    @Test func theMessagesNameTheLimit() {
        var configuration = APIConfiguration()
        configuration.maxUploadBytes = 5 * 1_048_576
        let json = BodyLimit.json.bodyError
        #expect(json.status == .contentTooLarge)
        #expect(json.code == "too_large")
        #expect(json.message == "the request body is over the 1 MiB limit for JSON")
        #expect(json.field == nil)
        let upload = BodyLimit.upload(configuration)
        #expect(upload.error.message == "the photo is over the 5 MiB limit for uploads (see --max-upload-mb)")
        #expect(upload.error.field == "photo")
        #expect(
            upload.bodyError.message
                == "the request body is over the 6 MiB limit for uploads (5 MiB for the photo, see --max-upload-mb, "
                + "and 1 MiB for the other fields)"
        )
        #expect(BodyLimit.framework(2 * 1_048_576).error.message.contains("2 MiB"))
    }

    @Test(
        arguments: [
            (Int64(1_048_576), "1 MiB"), (Int64(50 * 1_048_576), "50 MiB"), (Int64(512 * 1024), "512 KiB"),
            (Int64(1_500_000), "1500000 bytes"),
        ] as [(Int64, String)]
    )
    func sizesInWholeUnits(bytes: Int64, text: String) {
        #expect(BodyLimit.describe(bytes) == text)
    }
}
