import ContinuumDiscovery
import ContinuumNode
import ContinuumStore
import Foundation

/// LAN discovery's state, asked of the running node over its control socket.
enum DiscoveryQuery {
    /// The running node's discovery state, or `stopped` when no node runs on `directory`.
    static func status(of directory: DataDirectory) -> DiscoveryStatus {
        let stopped = DiscoveryStatus(state: .stopped)
        // No node, or one that does not answer: `status` shows what it can without it.
        guard let connection = try? ControlClient(directory), (try? connection.send(.discovery)) != nil,
            case .discovery(let status)? = try? connection.reply()
        else { return stopped }
        return status
    }

    /// One line for `status`.
    static func describe(_ status: DiscoveryStatus) -> String {
        let peers =
            "\(status.peersPresent) peer\(status.peersPresent == 1 ? "" : "s") on the LAN now, \(status.peersSeen) seen"
        switch status.state {
        case .stopped: return "no node is running ('continuum-node run' starts one)"
        case .off: return "off (--no-discovery)"
        case .starting: return "starting"
        case .on:
            let open = Set(status.openGroups.map(\.group.name)).sorted()
            return "on as '\(status.serviceName ?? "")', \(peers)"
                + (open.isEmpty
                    ? "" : "; open groups nearby: \(open.joined(separator: ", ")) ('continuum-node join NAME')")
        case .unavailable:
            return "unavailable: \(status.lastError ?? "unknown reason"); retrying in the background; \(peers)"
        }
    }
}
