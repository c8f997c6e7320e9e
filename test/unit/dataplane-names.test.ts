import { attachmentLinkNames, isHostLinkName } from '../../kernel/names';
import { activationBudgetSeconds } from '../../domain/dataplane';
import { ActivationPolicySchema } from '../../domain/config';

test('link names and MACs are derived from the attachment, fit IFNAMSIZ, and differ per attachment', () => {
  const a = attachmentLinkNames('c'.repeat(64), 'eth0');
  expect(attachmentLinkNames('c'.repeat(64), 'eth0')).toEqual(a);
  expect(a.hostName).toHaveLength(15);
  expect(isHostLinkName(a.hostName)).toBe(true);
  for (const mac of [a.hostMac, a.containerMac]) expect(mac).toMatch(/^02(:[0-9a-f]{2}){5}$/);
  expect(a.hostMac).not.toBe(a.containerMac);
  const names = new Set<string>();
  for (let i = 0; i < 2000; i++) names.add(attachmentLinkNames(`ctr-${i}`, 'eth0').hostName);
  names.add(attachmentLinkNames('ctr-0', 'eth1').hostName);
  expect(names.size).toBe(2001);
});

test('the activation budget covers every attempt and every backoff', () => {
  const policy = ActivationPolicySchema.parse({
    initialIntervalSeconds: 1,
    maximumIntervalSeconds: 4,
    maximumAttempts: 5,
    attemptTimeoutSeconds: 10,
  });
  // backoffs 1, 2, 4, 4 between five attempts of at most 10 s
  expect(activationBudgetSeconds(policy)).toBe(5 * 10 + 1 + 2 + 4 + 4);
  expect(activationBudgetSeconds({ ...policy, maximumAttempts: 1 })).toBe(10);
});
