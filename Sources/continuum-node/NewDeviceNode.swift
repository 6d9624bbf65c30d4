import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Logging
import ServiceLifecycle

/// The node a new device runs for the length of `init --link` or `recover`: on a free port, dialling no remembered
/// peer, founding no account (the device joins one), named `name` in its HELLO.
struct NewDeviceNode {
    let node: Node
    private let running: Task<Void, any Error>

    static func start(_ directory: DataDirectory, name: String?) async throws -> NewDeviceNode {
        let logger = Logger(label: "continuum")
        var configuration = NodeConfiguration()
        configuration.port = 0
        configuration.dialRemembered = false
        configuration.foundsAccount = false
        configuration.sync.name = name
        let node = try Node(directory: directory, configuration: configuration, logger: logger, discovery: nil)
        _ = try await node.start()
        let services = ServiceGroup(services: node.services(), logger: logger)
        return NewDeviceNode(node: node, running: Task { try await services.run() })
    }

    /// Stops the node's services (their sessions say goodbye), then closes it.
    func stop() async {
        running.cancel()
        // The services' end, whatever it was: the node closes either way, and a failure was logged where it happened.
        _ = await running.result
        await RunCommand.close(node)
    }

    /// Waits (at most 60 s) for the first round of history from a peer that `from` accepts (any, by default).
    static func firstRound(
        _ events: AsyncStream<SyncEvent>,
        from accepts: @escaping @Sendable (AuthorID) -> Bool = { _ in true }
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    if case .roundFinished(let peer, _) = event, accepts(peer) { return }
                }
            }
            // The timer's end (or its cancellation) is all that matters.
            group.addTask { try? await Task.sleep(for: .seconds(60)) }
            await group.next()
            group.cancelAll()
        }
    }
}
