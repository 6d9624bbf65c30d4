import ArgumentParser
import ContinuumCore
import ContinuumDiscovery
import ContinuumHTTP
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import ContinuumSync
import ContinuumWire
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the node: listen for peers, dial them, and keep everything in sync until stopped.",
        discussion: """
            SIGINT (Ctrl-C) or SIGTERM stops it cleanly. Only one node may run on a data directory; the other
            commands keep working while it runs, and what they write reaches connected peers at once.
            """
    )

    @OptionGroup var options: DataOptions

    @Option(help: "The TCP port to listen on for peers (0 picks a free one).")
    var port = 7420

    @Option(help: ArgumentHelp("The address to listen on.", valueName: "ADDR"))
    var listen = "0.0.0.0"

    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp(
            "A peer to dial (repeatable). HOST:PORT is kept connected; ID@HOST:PORT (its 64-hex-digit node id) joins the overlay like a discovered peer, dialled when it is a neighbour.",
            valueName: "[ID@]HOST:PORT"
        )
    )
    var peers: [String] = []

    @Option(
        name: .customLong("max-peers"),
        help:
            "Sessions kept at once, at most: the node's neighbours in the overlay of the peers it knows (0: no limit, every known peer, and every record to every peer)."
    )
    var maxPeers = 8

    @Flag(name: .customLong("no-discovery"), help: "Do not announce this node on the LAN, nor look for peers there.")
    var noDiscovery = false

    @Option(
        help: ArgumentHelp(
            "Be in the network group of this name (and announce it on the LAN): every node given the same name shares with the others.",
            valueName: "NAME"
        )
    )
    var network: String?

    @Option(
        name: .customLong("network-key"),
        help: ArgumentHelp(
            "Be in the network group of the key in this file (e.g. 32 random bytes); see CLI.md.",
            valueName: "FILE"
        )
    )
    var networkKey: String?

    @Option(name: .customLong("max-photo-mb"), help: "Fetch photos up to this size at once; larger ones are skipped.")
    var maxPhotoMB = 50

    @Option(
        name: .customLong("api-listen"),
        help: ArgumentHelp(
            "Serve the HTTP API and web UI here (port 0 picks a free one). Beyond loopback (0.0.0.0:7421 for a phone), "
                + "a token is required: --api-token, else one kept in the data directory.",
            valueName: "HOST:PORT"
        )
    )
    var apiListen = "127.0.0.1:7421"

    @Option(
        name: .customLong("api-token"),
        help: ArgumentHelp("Require this token (16+ characters) on every HTTP request.", valueName: "TOKEN")
    )
    var apiToken: String?

    @Flag(name: .customLong("no-api"), help: "Do not serve the HTTP API and web UI.")
    var noAPI = false

    @Flag(
        name: .customLong("api-tls"),
        help: ArgumentHelp(
            "Serve the HTTP API over TLS (https) with this node's own certificate, so that the token and photos "
                + "cannot be read off the Wi-Fi. Browsers warn once: compare the fingerprint printed."
        )
    )
    var apiTLS = false

    @Option(name: .customLong("max-upload-mb"), help: "The largest photo the HTTP API accepts, in MiB.")
    var maxUploadMB = 50

    @Option(
        name: .customLong("anti-entropy-interval"),
        help: "Seconds between anti-entropy rounds with every peer (0: only on connect and on 'sync')."
    )
    var antiEntropyInterval = 60

    @Flag(name: .customLong("insecure-plaintext"), help: "Debugging only: no TLS. Refused unless both peers set it.")
    var insecurePlaintext = false

    @Flag(
        name: .customLong("join-open"),
        help: "Join the first open group announced on the LAN while this node is in no group (events and demos)."
    )
    var joinOpen = false

    @Flag(name: .customLong("no-remembered-peers"), help: "Do not dial the peers met in earlier runs.")
    var noRememberedPeers = false

    @Flag(
        name: .customLong("notify-new-posts"),
        help: "Make a notification for every new post from another node (there is always a 'watch' event)."
    )
    var notifyNewPosts = false

    @Option(name: .customLong("handshake-timeout-ms"), help: .hidden)
    var handshakeTimeoutMS = 10_000

    @Option(name: .customLong("idle-timeout-ms"), help: .hidden)
    var idleTimeoutMS = 45_000

    @Option(name: .customLong("api-header-timeout-ms"), help: .hidden)
    var apiHeaderTimeoutMS = 10_000

    @Option(name: .customLong("tree-repair-ms"), help: .hidden)
    var treeRepairMS = 200

    @Option(name: .customLong("test-photo-chunk-delay-ms"), help: .hidden)
    var testPhotoChunkDelayMS = 0

    @Option(name: .customLong("test-photos-per-want"), help: .hidden)
    var testPhotosPerWant = 64

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        for peer in peers where peer.contains("@") ? Self.knownPeer(peer) == nil : PeerAddress(peer) == nil {
            throw ValidationError(
                "--peer '\(peer)' is not HOST:PORT (for IPv6: [ADDR]:PORT) nor ID@HOST:PORT (ID: a node id, 64 hex digits)"
            )
        }
        guard maxPeers >= 0 else { throw ValidationError("--max-peers must be 0 (no limit) or more") }
        guard maxPhotoMB >= 0 else { throw ValidationError("--max-photo-mb must be 0 or more") }
        guard antiEntropyInterval >= 0 else { throw ValidationError("--anti-entropy-interval must be 0 or more") }
        if network != nil && networkKey != nil {
            throw ValidationError("--network and --network-key both name the network; give only one of them")
        }
        if !noAPI { _ = try apiConfiguration() }
        if noAPI && apiTLS { throw ValidationError("--api-tls and --no-api: there is no API to serve over TLS") }
        let tokenCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=")
        if let apiToken, apiToken.count < 16 || !apiToken.allSatisfy(tokenCharacters.contains) {
            throw ValidationError(
                "--api-token must be 16 or more characters: letters, digits and - . _ ~ + / = (it goes in a cookie)"
            )
        }
        guard maxUploadMB > 0 else { throw ValidationError("--max-upload-mb must be 1 or more") }
        guard apiHeaderTimeoutMS > 0 else { throw ValidationError("--api-header-timeout-ms must be 1 or more") }
        if let network, TextRules.isBlank(network) {
            throw ValidationError("--network is blank; give a network name, or leave it out")
        }
    }

    func apiConfiguration() throws -> APIConfiguration {
        // HOST:PORT or [V6]:PORT; port 0 picks a free one.
        guard let colon = apiListen.lastIndex(of: ":"), let port = Int(apiListen[apiListen.index(after: colon)...]),
            (0...65535).contains(port), let address = PeerAddress(String(apiListen[..<colon]) + ":1")
        else {
            throw ValidationError("--api-listen '\(apiListen)' is not HOST:PORT (for IPv6: [ADDR]:PORT)")
        }
        var api = APIConfiguration()
        api.host = address.host
        api.port = port
        api.token = apiToken
        api.maxUploadBytes = Int64(maxUploadMB) * 1_048_576
        api.headerTimeout = .milliseconds(apiHeaderTimeoutMS)
        return api
    }

    func run() async throws {
        Self.limitMallocArenas()
        let networkID = try self.networkID()
        let context = try options.open()
        let identity = try context.identityMadeIfNeeded()
        let configuration = try await nodeConfiguration(
            network: networkID,
            name: context.store.displayName(of: identity.author)
        )
        try context.store.close()
        let logger = Logger(label: "continuum")
        let node: Node
        do {
            node = try Node(
                directory: context.directory,
                configuration: configuration,
                logger: logger,
                discovery: noDiscovery ? nil : AvahiDiscovery(logger: logger)
            )
        } catch let error as StoreError {
            throw CLIError(error.message)
        }
        if insecurePlaintext {
            FileHandle.standardError.write(
                Data("warning: --insecure-plaintext: no encryption, no authentication\n".utf8)
            )
        }
        // Made only once the node holds the data directory's lock: a second `run` on it writes nothing.
        let api = noAPI ? nil : try securedAPIConfiguration(context.directory)
        let addresses: [SocketAddress]
        do {
            addresses = try await node.start()
        } catch let error as StoreError {
            throw CLIError(error.message)
        }
        // Unbuffered, so that a supervising script sees it at once.
        FileHandle.standardOutput.write(Data(Self.announcement(identity.author, addresses).utf8))
        // The web UI's address is written when the API listens, and forgotten when it stops (or does not run).
        GuestLinkCommand.forgetWebAddress(in: context.directory)
        try await Self.serve(
            node,
            api: api.map { apiServer($0, node: node, directory: context.directory, logger: logger) },
            logger: logger
        )
        GuestLinkCommand.forgetWebAddress(in: context.directory)
        print("stopped")
    }

    /// The HTTP API of `node`; it prints its address once it listens.
    func apiServer(
        _ configuration: APIConfiguration,
        node: Node,
        directory: DataDirectory,
        logger: Logger
    ) -> APIServer {
        APIServer(
            configuration: configuration,
            services: APIServices(
                node: node,
                inspector: MediaInspector(thumbnails: node.thumbnails),
                thumbnails: node.thumbnails
            ),
            logger: logger,
            listening: { [configuration] url in
                FileHandle.standardOutput.write(Data(Self.apiAnnouncement(url, configuration).utf8))
                GuestLinkCommand.keepWebAddress(url, configuration, in: directory, logger: logger)
            }
        )
    }

    /// The API's configuration with what listening beyond loopback needs: a token (the one given, else one kept in
    /// the data directory, so that the address a phone saved stays good across restarts), a warning on stderr, and
    /// under `--api-tls` the certificate kept in the data directory.
    func securedAPIConfiguration(_ directory: DataDirectory) throws -> APIConfiguration {
        var api = try apiConfiguration()
        if !api.isLoopback {
            if api.token == nil { api.token = try APIToken.loadOrCreate(in: directory.url) }
            let advice = apiTLS ? "" : "; add --api-tls so that it cannot be read off the Wi-Fi"
            FileHandle.standardError.write(
                Data(
                    """
                    WARNING: the HTTP API listens on \(apiListen), beyond this machine. Anyone with the token can \
                    read, post, comment and delete as this node. Keep the token secret\(advice).

                    """.utf8
                )
            )
        }
        if apiTLS {
            // The names the browser may use: loopback, the host it listens on, and every address of the machine.
            let bare = api.host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let hosts = ["127.0.0.1", "::1", bare] + PhoneAccess.interfaceAddresses().map(\.text)
            do {
                api.tls = try APICertificate.loadOrCreate(in: directory.url, hosts: hosts)
            } catch {
                throw CLIError("cannot make or read the API's TLS certificate in \(directory.path): \(error)")
            }
        }
        return api
    }

    /// What `run` prints once the API listens: its address; beyond loopback, the addresses a phone opens and the
    /// QR code of the first; under `--api-tls`, the certificate's fingerprint.
    static func apiAnnouncement(_ url: String, _ configuration: APIConfiguration) -> String {
        var lines = ["api on \(url)\(configuration.token.map { "?token=\(PhoneAccess.queryValue($0))" } ?? "")"]
        if !configuration.isLoopback, let port = URLComponents(string: url)?.port {
            let access = PhoneAccess(
                host: configuration.host,
                port: port,
                tls: configuration.tls != nil,
                token: configuration.token,
                interfaces: PhoneAccess.interfaceAddresses()
            )
            lines += access.urls.map { "open on a phone: \($0)" }
            if let qr = access.qrText { lines.append(qr) }
            if !access.reachable { lines.append(access.message) }
        }
        if let tls = configuration.tls {
            lines.append("api certificate \(tls.fingerprint) (the browser warns once: check it shows this fingerprint)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The node's configuration from the options.
    func nodeConfiguration(network: NetworkID, name: String?) -> NodeConfiguration {
        var configuration = NodeConfiguration()
        configuration.discoveryNetwork = network
        if self.network != nil || networkKey != nil {
            // A network is a group without founder or admin, which anyone who knows its name or key joins.
            let label = NetworkChoice.label(network: self.network, id: network)
            configuration.networks = [(GroupID(unchecked: Data(network.bytes)), label)]
        }
        configuration.listenHost = listen
        configuration.port = port
        configuration.peers = peers.filter { !$0.contains("@") }.compactMap(PeerAddress.init)
        configuration.knownPeers = peers.compactMap(Self.knownPeer)
        configuration.sync.maxPeers = maxPeers
        configuration.sync.treeRepairDelay = .milliseconds(treeRepairMS)
        configuration.dialRemembered = !noRememberedPeers
        configuration.joinOpen = joinOpen
        configuration.sync.name = name
        configuration.sync.plaintext = insecurePlaintext
        configuration.sync.maxPhotoBytes = UInt64(maxPhotoMB) * 1024 * 1024
        configuration.sync.antiEntropyInterval = antiEntropyInterval == 0 ? nil : .seconds(antiEntropyInterval)
        configuration.sync.listenPort = UInt16(port)
        configuration.sync.handshakeTimeout = .milliseconds(handshakeTimeoutMS)
        configuration.sync.idleTimeout = .milliseconds(idleTimeoutMS)
        configuration.sync.notifyNewPosts = notifyNewPosts
        if testPhotoChunkDelayMS > 0 { configuration.sync.photoChunkDelay = .milliseconds(testPhotoChunkDelayMS) }
        configuration.sync.photosPerWant = min(max(testPhotosPerWant, 1), WireLimits.maxPhotosPerBatch)
        return configuration
    }

    /// The first lines a supervising script reads: the node's id and where it listens.
    static func announcement(_ node: AuthorID, _ addresses: [SocketAddress]) -> String {
        var lines = "node id: \(node.hex)\n"
        for address in addresses {
            let host = address.ipAddress ?? "\(address)"
            let shown = host.contains(":") ? "[\(host)]" : host
            lines += "listening on \(shown):\(address.port ?? 0)\n"
        }
        return lines
    }

    /// One service group of the node's parts and the HTTP API, until SIGTERM or SIGINT; then the node closes.
    /// On a terminal, the activity (peers, records, photos) is shown meanwhile.
    static func serve(_ node: Node, api: APIServer?, logger: Logger) async throws {
        let activity = Task { [engine = node.engine] in
            guard isatty(STDOUT_FILENO) == 1 else { return }
            for await event in await engine.events() { Activity.show(event) }
        }
        defer { activity.cancel() }
        var configuration = ServiceGroupConfiguration(
            services: (node.services() + (api.map { [$0] } ?? [])).map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // Sessions say goodbye within a second each, at once; whatever still runs after 8 s is cancelled, so that
        // the node exits within 10 s of SIGTERM whatever its peers do.
        configuration.maximumGracefulShutdownDuration = .seconds(8)
        let group = ServiceGroup(configuration: configuration)
        do {
            try await group.run()
        } catch let error as APIStartError {
            await close(node)
            throw CLIError(error.description)
        }
        await close(node)
    }

    /// Closes the node; then, since the process exits after this, waits for the image library's call under way, if
    /// any, and ends its use (``ThumbnailService/closeImageLibrary()``).
    static func close(_ node: Node) async {
        await node.close()
        await ThumbnailService.closeImageLibrary()
    }
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync with every connected peer now, through the running node; shows progress on a terminal."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let directory = DataDirectory.resolve(explicit: options.data, environment: ProcessInfo.processInfo.environment)
        let connection = try ControlClient(directory)
        try connection.send(.sync)
        let progress = Progress(enabled: !output.json && isatty(STDOUT_FILENO) == 1)
        while let reply = try connection.reply() {
            switch reply {
            case .syncProgress(_, let records, let ofRecords, let bytes, let ofBytes):
                progress.update(records: records, ofRecords: ofRecords, bytes: bytes, ofBytes: ofBytes)
            case .synced(let peers, let completed):
                progress.finish()
                if output.json {
                    let line = try JSONEncoder.frontEnd().encode(Result(peers: peers, completed: completed))
                    print(String(decoding: line, as: UTF8.self))
                } else if peers == 0 {
                    print("No peers are connected; nothing to sync.")
                } else {
                    print("Synced with \(completed) of \(peers) peer\(peers == 1 ? "" : "s").")
                }
                if completed < peers { throw ExitCode(1) }
                return
            default:
                continue
            }
        }
        throw CLIError("the node closed the control connection before the sync finished")
    }

    /// `sync --json`: one compact line, as the node's last message was before it was typed.
    struct Result: Encodable {
        let event = "done"
        let peers: Int
        let completed: Int
    }
}

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a post's photo now, through the running node, even if it is over --max-photo-mb."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    func run() async throws {
        let context = try options.open()
        let id = try await context.store.resolvePost(post)
        guard let photo = try await context.store.post(id)?.post.photo else {
            throw CLIError("post \(post) was deleted")
        }
        try context.store.close()
        let connection = try ControlClient(context.directory)
        try connection.send(.fetch(photo: photo.sha256))
        let progress = Progress(enabled: !output.json && isatty(STDOUT_FILENO) == 1)
        while let reply = try connection.reply() {
            switch reply {
            case .photoProgress(let bytes, let ofBytes):
                progress.update(records: 0, ofRecords: 0, bytes: bytes, ofBytes: ofBytes)
            case .photoStored(let path):
                progress.finish()
                if output.json {
                    try Output.json(["post": id.hex, "sha256": photo.sha256.hex, "path": path])
                } else {
                    print(path)
                }
                return
            default:
                continue
            }
        }
        throw CLIError("the node closed the control connection before the photo arrived")
    }
}

struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "The peers this node has met: id, name, address, state, last seen, records and bytes each way."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let context = try options.open()
        let stored = try await context.store.peers()
        // Without a running node (or with one that does not answer), no peer wants pushes: null in the JSON. The
        // store's counters hold ended sessions; the node adds what its open sessions moved so far.
        var interest: [AuthorID: Int] = [:]
        var traffic: [AuthorID: LiveTraffic] = [:]
        var sessions: Set<AuthorID>?
        // No node running: only what the store holds is shown.
        if let connection = try? ControlClient(context.directory) {
            // A node that does not take the request or answer it is shown as no node is (see above); its reply
            // only adds to what the store holds.
            try? connection.send(.connected)
            if case .connected(let up, let wanted, let live)? = try? connection.reply() {
                interest = wanted
                traffic = live
                sessions = Set(up)
            }
        }
        let peers = stored.map { $0.adding(traffic[$0.id]) }
        let live = { (peer: PeerRecord) in sessions.map { $0.contains(peer.id) } }
        if output.json {
            return try Output.json([
                "peers": peers.map { PeerJSON($0, live: live($0), pushInterest: interest[$0.id]) }
            ])
        }
        if peers.isEmpty {
            print("No peers met yet. Start the node with 'continuum-node run --peer HOST:PORT'.")
            return
        }
        for peer in peers {
            let pushes = interest[peer.id].map { "  wants pushes for \($0) post\($0 == 1 ? "" : "s")" } ?? ""
            print(
                "\(peer.id.short)  \(peer.name ?? "-")  \(peer.host):\(peer.port)  "
                    + "\(PeerJSON.state(peer.state, connected: live(peer)))  "
                    + "last seen \(peer.lastSeen.rfc3339)  records in/out \(peer.recordsIn)/\(peer.recordsOut)  "
                    + "bytes in/out \(peer.bytesIn)/\(peer.bytesOut)\(pushes)"
            )
        }
    }
}

/// Progress on a terminal: records, bytes, rate and ETA, redrawn in place; nothing when not a terminal.
final class Progress {
    private let enabled: Bool
    private let started = Date()
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(records: UInt64, ofRecords: UInt64, bytes: UInt64, ofBytes: UInt64) {
        guard enabled else { return }
        let elapsed = max(0.001, Date().timeIntervalSince(started))
        let rate = Double(bytes) / elapsed
        let eta = rate > 0 && ofBytes > bytes ? Double(ofBytes - bytes) / rate : 0
        let line = String(
            format: "\r%@%@ of %@, %@/s, ETA %.0fs   ",
            ofRecords > 0 ? "\(records)/\(ofRecords) records, " : "",
            ByteCountFormatter.string(fromByteCount: Int64(clamping: bytes), countStyle: .file),
            ByteCountFormatter.string(fromByteCount: Int64(clamping: ofBytes), countStyle: .file),
            ByteCountFormatter.string(fromByteCount: Int64(rate), countStyle: .file),
            eta
        )
        FileHandle.standardOutput.write(Data(line.utf8))
        drawn = true
    }

    func finish() {
        if drawn { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}

/// One line per event on a terminal; photo progress redraws its line in place.
enum Activity {
    static func show(_ event: SyncEvent) {
        let line: String
        switch event {
        case .peerJoined(let peer, let name): line = "peer joined: \(name ?? "(no name)") \(peer.short)"
        case .peerLeft(let peer, let reason): line = "peer left: \(peer.short) (\(reason))"
        case .recordsStored(let peer, let count):
            line = "received \(count) record\(count == 1 ? "" : "s") from \(peer.short)"
        case .roundFinished, .progress, .postAdded, .commentAdded, .postEdited, .deleted, .reacted, .thumbnailArrived:
            return
        case .notification(let notification): line = "notification: " + WatchEvent(.notification(notification)).summary
        case .joinRequested: line = WatchEvent(event).summary
        case .forkDetected(let fork):
            line = "fork detected: author \(fork.author.short) at \(fork.sequence) (see 'continuum-node status')"
        case .photoArrived(let hash): line = "photo \(hash.short) complete"
        case .photoSkipped(let hash, let bytes):
            line = "photo \(hash.short) skipped: \(bytes / 1_048_576) MiB is over --max-photo-mb"
        case .photoProgress(let hash, let bytes, let total):
            let percent = total > 0 ? Int(bytes * 100 / total) : 0
            FileHandle.standardOutput.write(Data("\rphoto \(hash.short): \(percent)% of \(total / 1024) KiB ".utf8))
            return
        }
        FileHandle.standardOutput.write(Data("\r\(line)\u{1B}[K\n".utf8))
    }
}
