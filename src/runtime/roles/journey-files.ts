/**
 * Where a file ended (archive/ or failed/), for its delivery's journey: the outcome stage says
 * which file went where, this names the delivery (from the file's name) and queues the step on the
 * process' journey writer (one pipelined write per batch of moves: the outcome path is not the push
 * path). Events files are not recorded here: each event's own outcome is.
 */
import { basename, relative } from 'node:path';
import { parseInflightName } from '../../spool/paths.js';
import type { Keys } from '../../store/keys.js';
import type { Logger } from '../../log.js';
import { createJourneyWriter, historyTtlSec, type JourneyWriter } from '../../journey/journey.js';
import type { RedisConnection } from '../../store/redis.js';
import type { RedisHealth } from '../../store/redis-health.js';
import type { FileEndJournal } from '../../outcome/apply.js';
import { parseSpoolName } from '../../validate/spool-name.js';

export function fileEndJournal(writer: JourneyWriter, spoolDir: string): FileEndJournal {
  return {
    ended(kind, fileName, where, from, target) {
      if (kind === 'events') return;
      const name = parseSpoolName(kind, fileName);
      const deliveryId = name.ok ? name.value.deliveryId : `?${fileName}`;
      const version = parseInflightName(basename(from))?.contentId.slice(0, 8);
      const step = {
        k: kind === 'labels' ? 'l' : 'c',
        s: where,
        ...(version === undefined ? { f: fileName } : { h: version }),
        to: compactPath(relative(spoolDir, target), fileName),
      } as const;
      writer.add({ deliveryId, step });
    },
  };
}

/**
 * The process' journey writer for steps without a round trip of their own. A failed write is a
 * warning, once per Redis outage (the health tracker says the rest).
 */
export function journeyWriterOf(ctx: {
  redis: RedisConnection;
  keys: Keys;
  logger: Logger;
  health: RedisHealth;
  clock: { now(): number };
  config: { history: { retentionDays: number } };
}): JourneyWriter {
  const log = ctx.logger.child({ mod: 'journey' });
  return createJourneyWriter(
    ctx.redis,
    ctx.keys,
    historyTtlSec(ctx.config.history.retentionDays),
    () => ctx.clock.now(),
    (error) => {
      if (!ctx.health.report(error, 'journey')) log.warn({ err: error }, 'journey steps not recorded');
    },
  );
}

/** A path ending in the file's own name is kept as its folder and a slash (the reader adds the name back). */
function compactPath(path: string, fileName: string): string {
  return path.endsWith(`/${fileName}`) ? path.slice(0, -fileName.length) : path;
}
