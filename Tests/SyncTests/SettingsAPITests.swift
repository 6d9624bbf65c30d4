import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// The settings routes of the HTTP API on real nodes (every operation tagged `settings` in the OpenAPI document):
/// the display name, a photo fetched on demand with its progress, and the web UI from a phone (LAN addresses, the
/// QR code, `--api-tls`). Their bad input is tested in-process, in ContinuumHTTPTests (SettingsBadInputTests).
@Suite("HTTP API: name, fetch on demand, phone access, TLS", .serialized)
struct SettingsAPITests {
    let base = APITests()

    @Test("set the name; fetch a photo skipped over --max-photo-mb, with progress; the phone's view of a loopback API")
    func everySettingsRoute() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer { for node in [alice, bob] { node.remove() } }
        let big = try await alice.cli("post", alice.fixture("waterfall.jpg"), "--caption", "Too big for Bob")
        let shown = try JSONSerialization.jsonObject(with: Data(try await alice.cli("show", big, "--json").utf8))
        let sha = try #require(((shown as? [String: Any])?["photo"] as? [String: Any])?["sha256"] as? String)
        // Alice sends each photo chunk 1.5 s late, so that Bob's event stream, opened first, sees the transfer.
        try await alice.start(extra: ["--test-photo-chunk-delay-ms", "1500"])
        // Bob takes no photo by itself: every one is over his limit of 0 MiB.
        try await bob.start(peers: [alice], extra: ["--max-photo-mb", "0"])
        let api = try await base.checker(bob)
        try await eventually("Bob has Alice's post, without its photo") {
            (try? await bob.cli("feed")).map { $0.contains("Too big for Bob") } ?? false
        }

        let status = try await base.call(api, bob, "GET", "/api/status", expect: 200)
        #expect(status.object["maxPhotoBytes"] as? Int == 0)
        let printed = try await NodeBinary.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(status.object["version"] as? String == printed && printed.contains("(protocol 3)"), "\(printed)")

        let named = try await base.call(api, bob, "PUT", "/api/name", json: ["name": "Bobby"], expect: 200)
        #expect(named.object["name"] as? String == "Bobby")
        #expect(try await bob.cli("status").contains("name:     Bobby"))

        // Asked while it is not here: 202 and progress events, then the photo.
        let events = await bob.http.subscribe("/api/events?progress=true", timeout: .seconds(60)) {
            $0.contains("event: photoArrived")
        }
        let asked = try await base.call(api, bob, "POST", "/api/photos/\(sha)/fetch", expect: 202)
        #expect(asked.object["here"] as? Bool == false && asked.object["connectedPeers"] as? Int == 1)
        #expect(asked.object["message"] as? String == "fetching the photo from the 1 connected peer")
        let stream = try await events.value
        #expect(stream.contains("event: photoProgress") && stream.contains("\"sha256\":\"\(sha)\""), "\(stream)")
        let photo = try await base.call(api, bob, "GET", "/api/photos/\(sha)", expect: 200)
        #expect(AssetHash.of(photo.body).hex == sha)
        let again = try await base.call(api, bob, "POST", "/api/photos/\(sha)/fetch", expect: 200)
        #expect(again.object["here"] as? Bool == true && again.object["connectedPeers"] is NSNull)

        // A loopback API is not for phones: no address, and a message that says how.
        let phone = try await base.call(api, bob, "GET", "/api/phone", expect: 200)
        #expect(phone.object["reachable"] as? Bool == false && (phone.object["urls"] as? [Any])?.isEmpty == true)
        #expect(phone.object["url"] is NSNull && phone.object["qr"] is NSNull && phone.object["tls"] as? Bool == false)
        #expect((phone.object["message"] as? String)?.contains("--api-listen 0.0.0.0:7421") == true)

        let unseen = api.unseen.intersection(api.operations(tagged: "settings"))
        #expect(unseen.isEmpty, "settings operations never exercised: \(unseen.sorted())")
        try await bob.stop()
        try await alice.stop()
    }

    @Test("beyond loopback: a kept token, the LAN addresses and their QR code, and --api-tls with its fingerprint")
    func phoneAccessOverTLS() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        try await alice.start(extra: ["--api-listen", "0.0.0.0:0", "--api-tls"])
        let out = try String(contentsOf: alice.stdoutFile, encoding: .utf8)
        let token = try String(contentsOf: alice.data.appendingPathComponent("api.token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 32)
        let mode = try FileManager.default.attributesOfItem(atPath: alice.data.appendingPathComponent("api.token").path)
        #expect((mode[.posixPermissions] as? Int) == 0o600)
        #expect(out.contains("api on https://0.0.0.0:\(alice.apiPort)/?token=\(token)"), "\(out)")

        // The fingerprint printed is the certificate's, as openssl computes it from the file.
        let certificate = alice.data.appendingPathComponent("api-tls.pem").path
        let openssl = try Self.run(
            "/usr/bin/openssl",
            ["x509", "-in", certificate, "-noout", "-fingerprint", "-sha256"]
        )
        let fingerprint = try #require(openssl.split(separator: "=").last).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        #expect(out.contains("api certificate SHA-256 \(fingerprint)"), "\(out)")

        // curl trusts only that certificate, and checks it names 127.0.0.1.
        let url = "https://127.0.0.1:\(alice.apiPort)/api/phone"
        let body = try Self.run(
            "/usr/bin/curl",
            ["-sS", "--fail", "--cacert", certificate, "-H", "Authorization: Bearer \(token)", url]
        )
        let phone = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(phone["tls"] as? Bool == true && phone["fingerprint"] as? String == "SHA-256 \(fingerprint)")
        // The addresses: this machine's IPv4 addresses that are not loopback or link-local, as `ip` lists them.
        let listed = try Self.run("/usr/sbin/ip", ["-4", "-o", "addr", "show"]).split(separator: "\n").compactMap {
            line -> String? in
            let fields = line.split(separator: " ")
            guard let index = fields.firstIndex(of: "inet"), index + 1 < fields.count else { return nil }
            let address = String(fields[index + 1].split(separator: "/")[0])
            return address.hasPrefix("127.") || address.hasPrefix("169.254.") ? nil : address
        }
        let expected = listed.map { "https://\($0):\(alice.apiPort)/?token=\(token)" }
        #expect(phone["urls"] as? [String] == expected, "\(phone)")
        #expect(phone["reachable"] as? Bool == !expected.isEmpty)
        for url in expected { #expect(out.contains("open on a phone: \(url)"), "\(out)") }
        if let first = expected.first {
            #expect(phone["url"] as? String == first)
            // The QR code is the first address's, as our encoder (checked against python-qrcode) draws it.
            #expect(phone["qr"] as? String == (try QRCode(encoding: first).svg()))
            #expect(out.contains(try QRCode(encoding: first).terminalText()))
        }
        // Without the token: refused, over TLS too; plain HTTP on the TLS port gets no answer.
        let refused = try Self.run(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", certificate, url]
        )
        #expect(refused == "401")
        let plain = try Self.run(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                "http://127.0.0.1:\(alice.apiPort)/api/status",
            ],
            allowFailure: true
        )
        #expect(plain != "200")
        try await alice.stop()

        // Valid for at most 825 days, or Apple's systems refuse it whatever the user says.
        let dates = try Self.run("/usr/bin/openssl", ["x509", "-in", certificate, "-noout", "-startdate", "-enddate"])
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        let bounds = dates.split(separator: "\n").compactMap { line in
            line.split(separator: "=", maxSplits: 1).last.flatMap {
                parser.date(from: $0.split(separator: " ").filter { !$0.isEmpty }.joined(separator: " "))
            }
        }
        #expect(bounds.count == 2, "\(dates)")
        if bounds.count == 2 { #expect(bounds[1].timeIntervalSince(bounds[0]) <= 825 * 86_400, "\(dates)") }

        // A kept token that others may read is refused, not used.
        let tokenFile = alice.data.appendingPathComponent("api.token").path
        #expect(chmod(tokenFile, 0o644) == 0)
        let leaked = try await NodeBinary.run([
            "run", "--data", alice.data.path, "--port", "0", "--no-discovery", "--api-listen", "0.0.0.0:0",
        ])
        #expect(leaked.status == 1 && leaked.stderr.contains("is accessible by other users"), "\(leaked.stderr)")
        #expect(leaked.stderr.contains("chmod 600"))
        #expect(chmod(tokenFile, 0o600) == 0)

        // Restarted: the same token and certificate (a phone's saved address and accepted warning stay good).
        try await alice.start(extra: ["--api-listen", "0.0.0.0:0", "--api-tls"])
        let second = try String(contentsOf: alice.stdoutFile, encoding: .utf8)
        #expect(second.contains("?token=\(token)") && second.contains("SHA-256 \(fingerprint)"), "\(second)")
        try await alice.stop()
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs a program and returns its stdout; throws when it fails, unless `allowFailure`.
    static func run(_ path: String, _ arguments: [String], allowFailure: Bool = false) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        if !allowFailure && process.terminationStatus != 0 {
            throw Failure(description: "\(path) \(arguments) failed (\(process.terminationStatus)): \(text)")
        }
        return text
    }
}
