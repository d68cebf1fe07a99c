/**
 * ioredis' Sentinel connector with one race closed. With `failoverDetector` on, each connection
 * subscribes to the sentinels' `+switch-master`, and the message makes the connector drop its
 * stream so the connection asks the sentinels again. The subscription outlives the stream: a
 * primary killed -9 closes the connection, ioredis reconnects (asking the sentinels, retrying
 * while they still name the dead primary), and the `+switch-master` of the promotion often comes
 * in the middle of one of those connects. ioredis then takes it for a close asked by its user: the
 * connect gives up ("Connection is closed") and the connection ends for good (status `end`), with
 * no reconnect. In the daemon that was a worker, a queue or the gate's connection gone silent for
 * the rest of the process's life after a Sentinel failover (stop 43's clean-clone run: the delivery
 * thread's connections ended, nothing was sent again, nothing said why).
 *
 * Here a `+switch-master` that comes while a connect is under way is let go: that connect is asking
 * the sentinels already, and a primary it finds demoted fails its role check (ioredis then connects
 * again). Once connected, the message cuts the stream as before. Given as ioredis' `Connector`
 * option, so every `duplicate()` (BullMQ's blocking connections) gets it too.
 *
 * What this leans on in ioredis 5 (test/integration/sentinel-switch-while-connecting.test.ts fails
 * if it changes): the connector keeps its detector in `failoverDetector`, made when the stream
 * connects, and the detector cuts through its own `disconnect()`.
 */
import { SentinelConnector, type SentinelConnectionOptions } from 'ioredis';

type Emitter = Parameters<SentinelConnector['connect']>[0];
type Stream = Awaited<ReturnType<SentinelConnector['connect']>>;
interface Detector {
  disconnect(): void;
}

export class SteadySentinelConnector extends SentinelConnector {
  private isConnectUnderWay = false;
  private readonly guarded = new WeakSet<Detector>();

  /** ioredis hands a `Connector` the connection's options untyped; they are a Sentinel connection's. */
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
  }

  override async connect(eventEmitter: Emitter): Promise<Stream> {
    this.isConnectUnderWay = true;
    try {
      const stream = await super.connect(eventEmitter);
      // ioredis makes the stream's detector on this same event, just before this listener runs.
      stream.once(this.options.enableTLSForSentinelMode === true && this.options.tls !== undefined ? 'secureConnect' : 'connect', () => this.guardDetector());
      return stream;
    } finally {
      this.isConnectUnderWay = false;
    }
  }

  private guardDetector(): void {
    const detector = (this as unknown as { failoverDetector?: Detector }).failoverDetector;
    if (detector === undefined || this.guarded.has(detector)) return;
    this.guarded.add(detector);
    const cut = detector.disconnect.bind(detector);
    detector.disconnect = () => {
      if (!this.isConnectUnderWay) cut();
    };
  }
}

/**
 * The steady connector, with the sentinels' password read from its file at each connect to a
 * sentinel (issue 45: CARRIER_SYNC_REDIS_SENTINEL_PASSWORD_FILE rotated without a restart).
 * ioredis reads `options.sentinelPassword` each time it opens a connection to a sentinel (to ask
 * for the primary, and for the failover detector's subscriptions); it takes a string only, so the
 * option becomes a getter here, on the options object the connection and its connector share.
 * A `duplicate()` copies the options (the getter's value of the moment) and makes its own
 * connector of this class, which puts the getter back.
 *
 * What it does not reach: a detector's subscription that loses its sentinel reconnects with the
 * password it was opened with (ioredis keeps it in that connection's options), until the
 * connection itself reconnects and opens new subscriptions.
 */
export function sentinelConnectorFollowing(sentinelPassword: { refresh(): string }): typeof SteadySentinelConnector {
  return class SentinelConnectorFollowingFile extends SteadySentinelConnector {
    constructor(options: unknown) {
      super(options);
      Object.defineProperty(this.options, 'sentinelPassword', { get: () => sentinelPassword.refresh(), enumerable: true, configurable: true });
    }
  };
}
